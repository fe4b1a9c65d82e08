/**
 * ElevenLabs' REST text to speech (POST /text-to-speech/{voice_id} and /stream) with the demo models, through
 * plain fetch: the audio comes at the rate its output_format names and transcribes back exactly; ElevenLabs'
 * model and voice ids stand for jifili-1 and its voice, Kuma's voice names keep their meaning; bad input is
 * refused naming the field, before anything is charged; what is delivered is charged by the character.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { decodeSpeech, transcribeWith } from '../helpers/speech-audio.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ clock: () => new Date('2026-09-01T00:00:00Z'), config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

const TEXT = 'i ni ce. a ka kɛnɛ wa?';
const words = (s: string) =>
  s
    .replace(/[.?,!]/g, '')
    .trim()
    .split(/\s+/)
    .join(' ');

const tts = (path: string, body: unknown, apiKey = t.apiKey) =>
  fetch(`${t.baseUrl}/openai/v1/text-to-speech/${path}`, {
    method: 'POST',
    headers: { 'xi-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('POST /text-to-speech/{voice_id}', () => {
  it.each([
    ['21m00Tcm4TlvDq8ikWAM?output_format=pcm_22050', 'pcm_22050', 22050, 'audio/pcm;rate=22050'],
    ['moussa/stream?output_format=pcm_44100', 'pcm_44100', 44100, 'audio/pcm;rate=44100'],
    ['moussa/stream?output_format=mp3_22050_32', 'mp3', 22050, 'audio/mpeg'],
    ['21m00Tcm4TlvDq8ikWAM', 'mp3', 44100, 'audio/mpeg'],
    ['moussa?output_format=ulaw_8000', 'ulaw', 8000, 'audio/basic'],
  ])('%s: audio at %s, %i Hz, that transcribes back', async (path, format, rate, mediaType) => {
    const account = await t.newAccount(10_000_000);
    const res = await tts(path, { text: TEXT, model_id: 'eleven_turbo_v2_5', voice_settings: { stability: 0.4, similarity_boost: 0.7 } }, account.apiKey);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain(mediaType);
    const decoded = await decodeSpeech(format, new Uint8Array(await res.arrayBuffer()));
    expect(decoded.sourceRate).toBe(rate);
    if (rate >= 16000) expect(await transcribeWith(t.server.engines!, decoded.samples, decoded.rate)).toBe(words(TEXT));
    const usage = await t.server.store.listUsage({ accountId: account.accountId });
    expect(usage.map((u) => [u.model, u.unit, u.quantity])).toEqual([['jifili-1', 'character', [...TEXT].length]]);
  });

  it.each([
    ['moussa?output_format=pcm_96000', { text: TEXT }, 400, 'invalid_value', 'output_format'],
    ['moussa?output_format=flac', { text: TEXT }, 422, 'invalid_request', 'output_format'],
    ['moussa', { text: 'i ni ce 😀' }, 400, 'invalid_value', 'text'],
    ['moussa', { text: '   ' }, 400, 'invalid_value', 'text'],
    ['moussa', { text: 'i '.repeat(600) }, 400, 'invalid_value', 'text'],
    ['sekou', { text: TEXT }, 400, 'unsupported_voice', 'voice'],
    ['not-a-voice', { text: TEXT }, 400, 'unsupported_voice', 'voice'],
    ['moussa', { text: TEXT, model_id: 'gpt-9' }, 404, 'model_not_found', 'model'],
  ])('%s %j: %i %s naming %s, nothing charged', async (path, body, status, code, param) => {
    const account = await t.newAccount(10_000_000);
    const res = await tts(path, body, account.apiKey);
    const error = ((await res.json()) as { error: { code: string; param: string } }).error;
    expect([res.status, error.code, error.param]).toEqual([status, code, param]);
    expect(await t.server.store.listUsage({ accountId: account.accountId })).toEqual([]);
  });
});
