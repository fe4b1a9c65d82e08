/**
 * The native TTS routes with the demo models, before the retirement date: the Djelia JS SDK's calls replayed
 * with axios exactly as its source sends them (src/services/tts.js, src/client/client.js: x-api-key and a
 * JSON Content-Type on an axios instance, responseType 'arraybuffer', or 'stream' read chunk by chunk), the
 * Python SDK's request shapes (requests' json= body: `", "` separators, non-ASCII escaped), every format
 * decoding back (and transcribing back where the rate allows), speakers and descriptions choosing the same
 * voice as the primary surface, deprecation headers, x-api-key only, and the ledger matching the primary's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { chargesSettled } from '../../helpers/settled.js';
import { jsSdkAxios, startNativeServer } from './sdk-axios.js';
import { decodeSpeech, transcribeWith } from '../../helpers/speech-audio.js';
import { pythonJson } from './python-json.js';

const TEXT = 'i ni ce a ka kɛnɛ';

let t: TestServer;
beforeAll(async () => {
  t = await startNativeServer();
}, 120_000);
afterAll(() => t.close());

/** The JS SDK's axios instance: created with its headers, every request sending them again. */
const sdk = () => jsSdkAxios(t.apiKey);

const PYTHON_HEADERS = {
  'user-agent': 'python-requests/2.32.3',
  'accept-encoding': 'gzip, deflate',
  accept: '*/*',
  connection: 'keep-alive',
  'content-type': 'application/json',
};
const python = (path: string, body: unknown) =>
  fetch(`${t.baseUrl}${path}`, { method: 'POST', headers: { ...PYTHON_HEADERS, 'x-api-key': t.apiKey }, body: pythonJson(body, ['chunk_size']) });

const native = (path: string, body: unknown, headers: Record<string, string> = { 'x-api-key': t.apiKey }) =>
  fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const primary = (body: Record<string, unknown>, apiKey = t.apiKey) =>
  fetch(`${t.baseUrl}/compat/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const transcribe = (samples: Float32Array, rate: number) => transcribeWith(t.server.engines!, samples, rate);

describe('the Djelia JS SDK', () => {
  it('tts.textToSpeech v1 (TTSRequest, default speaker 1): WAV that says the text', async () => {
    const { client, headers } = sdk();
    const response = await client.request({
      method: 'POST',
      url: `${t.baseUrl}/api/v1/models/tts`,
      headers,
      data: { text: TEXT, speaker: 1 },
      responseType: 'arraybuffer',
    });
    expect(response.headers['content-type']).toBe('audio/wav');
    const audio = Buffer.from(response.data);
    expect(audio.subarray(0, 4).toString()).toBe('RIFF');
    const { samples, rate } = await decodeSpeech('wav', audio);
    expect(await transcribe(samples, rate)).toBe(TEXT);
  });

  it('tts.textToSpeech v2 (TTSRequestV2 sends chunk_size, no format): mp3 that says the text', async () => {
    const { client, headers } = sdk();
    const data = { text: TEXT, description: 'Moussa speaks calmly', chunk_size: 1.0 };
    const response = await client.request({ method: 'POST', url: `${t.baseUrl}/api/v2/models/tts`, headers, data, responseType: 'arraybuffer' });
    expect(response.headers['content-type']).toBe('audio/mpeg');
    const { samples, rate } = await decodeSpeech('mp3', Buffer.from(response.data));
    expect(await transcribe(samples, rate)).toBe(TEXT);
  });

  it('tts.textToSpeech v2 with stream=true: responseType stream, chunks yielded as they come, mp3 that says the text', async () => {
    const { client, headers } = sdk();
    const data = { text: TEXT, description: 'Sekou, a warm voice', chunk_size: 0.5 };
    const response = await client.request({ method: 'POST', url: `${t.baseUrl}/api/v2/models/tts/stream`, headers, responseType: 'stream', data });
    const chunks: Buffer[] = [];
    for await (const chunk of response.data) if (chunk) chunks.push(chunk as Buffer);
    expect(chunks.length).toBeGreaterThan(0);
    const { samples, rate } = await decodeSpeech('mp3', Buffer.concat(chunks));
    expect(await transcribe(samples, rate)).toBe(TEXT);
  });

  it('an error reaches it as the status it classes (422 ValidationError) with a detail body', async () => {
    const { client, headers } = sdk();
    const failed = await client
      .request({ method: 'POST', url: `${t.baseUrl}/api/v1/models/tts`, headers, data: { text: TEXT, speaker: 7 }, responseType: 'arraybuffer' })
      .catch((e) => e);
    expect(failed.response.status).toBe(422);
    expect(JSON.parse(Buffer.from(failed.response.data).toString()).detail[0].loc).toEqual(['body', 'speaker']);
  });
});

describe('the Python SDK request shapes', () => {
  it('are json.dumps bytes', () => {
    expect(pythonJson({ text: 'kɛ', description: 'Seydou', chunk_size: 1 }, ['chunk_size'])).toBe(
      '{"text": "k\\u025b", "description": "Seydou", "chunk_size": 1.0}',
    );
  });

  it('v1 {"text": ..., "speaker": 1} with escaped non-ASCII: WAV', async () => {
    const res = await python('/api/v1/models/tts', { text: TEXT, speaker: 1 });
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'audio/wav']);
    const { samples, rate } = await decodeSpeech('wav', new Uint8Array(await res.arrayBuffer()));
    expect(await transcribe(samples, rate)).toBe(TEXT);
  });

  it('v2 and v2 stream {"text", "description", "chunk_size": 1.0}, and chunk_size null (its field is optional)', async () => {
    for (const [path, chunk_size] of [
      ['/api/v2/models/tts', 1.0],
      ['/api/v2/models/tts/stream', 1.0],
      ['/api/v2/models/tts/stream', null],
    ] as const) {
      const res = await python(path, { text: TEXT, description: 'Seydou', chunk_size });
      expect([res.status, res.headers.get('content-type')], path).toEqual([200, 'audio/mpeg']);
      const { samples, rate } = await decodeSpeech('mp3', new Uint8Array(await res.arrayBuffer()));
      expect(await transcribe(samples, rate)).toBe(TEXT);
    }
  });

  it('v1 with speaker null is the default speaker', async () => {
    const nulled = new Uint8Array(await (await python('/v1/models/tts', { text: TEXT, speaker: null })).arrayBuffer());
    const one = new Uint8Array(await (await python('/v1/models/tts', { text: TEXT, speaker: 1 })).arrayBuffer());
    expect(Buffer.from(nulled)).toEqual(Buffer.from(one));
  });
});

describe('formats, voices and the primary surface', () => {
  it.each([
    ['mp3', 'audio/mpeg', 24000],
    ['wav', 'audio/wav', 24000],
    ['wav_8k', 'audio/wav', 8000],
    ['ulaw_8k', 'audio/basic', 8000],
  ])('v2 format %s: %s that decodes back at %i Hz', async (format, mediaType, expectedRate) => {
    const res = await native('/v2/models/tts', { text: TEXT, description: 'Moussa', format });
    expect([res.status, res.headers.get('content-type')]).toEqual([200, mediaType]);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const { samples, rate } = await decodeSpeech(format === 'ulaw_8k' ? 'ulaw' : format, bytes);
    // The WAV header's rate (decodeSpeech resamples WAV to 24 kHz), and the raw μ-law's.
    if (format.startsWith('wav')) expect(Buffer.from(bytes).readUInt32LE(24)).toBe(expectedRate);
    if (format === 'ulaw_8k') expect(rate).toBe(expectedRate);
    expect(samples.length).toBeGreaterThan(rate * 0.3);
    // Telephony rates cannot carry the demo voice's upper formants: the transcript check is for the wideband formats.
    if (rate >= 16000) expect(await transcribe(samples, rate)).toBe(TEXT);
  });

  it('v1 speakers are djelia-tts-v1 speakers: the same bytes as POST /audio/speech with djelia.speaker', async () => {
    for (const speaker of [0, 4]) {
      const nativeWav = Buffer.from(await (await native('/v1/models/tts', { text: TEXT, speaker })).arrayBuffer());
      const primaryWav = Buffer.from(await (await primary({ model: 'djelia-tts-v1', input: TEXT, response_format: 'wav', djelia: { speaker } })).arrayBuffer());
      expect(nativeWav).toEqual(primaryWav);
    }
    const zero = Buffer.from(await (await native('/v1/models/tts', { text: TEXT, speaker: 0 })).arrayBuffer());
    const four = Buffer.from(await (await native('/v1/models/tts', { text: TEXT, speaker: 4 })).arrayBuffer());
    expect(zero).not.toEqual(four);
  });

  // The demo djelia-tts-v2 voice has a single speaker (the primary keeps it for every voice), so this checks
  // that a description is read as the primary surface reads a voice, not that the voices differ.
  it('a v2 description naming Sekou or Seydou speaks as that voice of djelia-tts-v2; any other description as Moussa', async () => {
    const v2 = async (description: string) => Buffer.from(await (await native('/v2/models/tts', { text: TEXT, description, format: 'wav' })).arrayBuffer());
    const voice = async (v: string) =>
      Buffer.from(await (await primary({ model: 'djelia-tts-v2', input: TEXT, voice: v, response_format: 'wav' })).arrayBuffer());
    expect(await v2('Seydou speaks slowly')).toEqual(await voice('seydou'));
    expect(await v2('a warm voice, SEKOU')).toEqual(await voice('sekou'));
    expect(await v2('a calm narrator')).toEqual(await voice('moussa'));
  });

  it('every answer carries Deprecation, Sunset and the successor Link (errors too)', async () => {
    for (const res of [await native('/v1/models/tts', { text: TEXT }), await native('/v2/models/tts', {})]) {
      await res.arrayBuffer();
      expect(res.headers.get('deprecation')).toMatch(/^@\d+$/);
      expect(res.headers.get('sunset')).toBe('Sun, 20 Sep 2026 00:00:00 GMT');
      expect(res.headers.get('link')).toBe('</compat/v1/audio/speech>; rel="successor-version"');
    }
  });

  it('x-api-key only: a Bearer header alone is 401 {detail}', async () => {
    const res = await native('/api/v2/models/tts', { text: TEXT, description: 'Moussa' }, { authorization: `Bearer ${t.apiKey}` });
    expect(res.status).toBe(401);
    expect(typeof ((await res.json()) as { detail: unknown }).detail).toBe('string');
  });
});

describe('billing', () => {
  // A response is charged once it was delivered: a moment after the client has it.
  const rowsOf = async (accountId: string) =>
    (await chargesSettled(t), await t.server.store.listUsage({ accountId })).map((r) => [r.model, r.unit, r.quantity, r.costMicros]);

  it.each([
    ['/v1/models/tts', { text: TEXT, speaker: 2 }, { model: 'djelia-tts-v1', input: TEXT, response_format: 'wav', djelia: { speaker: 2 } }],
    ['/v2/models/tts', { text: TEXT, description: 'Sekou', format: 'mp3' }, { model: 'djelia-tts-v2', input: TEXT, voice: 'sekou', response_format: 'mp3' }],
    [
      '/v2/models/tts/stream',
      { text: TEXT, description: 'Sekou', format: 'ulaw_8k', chunk_size: 0.1 },
      { model: 'djelia-tts-v2', input: TEXT, voice: 'sekou', response_format: 'ulaw_8k' },
    ],
  ])('%s records the same ledger rows as POST /audio/speech for the same text', async (path, nativeBody, primaryBody) => {
    const a = await t.newAccount(1_000_000);
    const b = await t.newAccount(1_000_000);
    await (await native(path, nativeBody, { 'x-api-key': a.apiKey })).arrayBuffer();
    await (await primary(primaryBody, b.apiKey)).arrayBuffer();
    const nativeRows = await rowsOf(a.accountId);
    expect(nativeRows).toEqual(await rowsOf(b.accountId));
    expect(nativeRows[0]!.slice(0, 3)).toEqual([primaryBody.model, 'character', [...TEXT].length]);
  });

  it('a refused request charges nothing', async () => {
    const a = await t.newAccount(1_000_000);
    for (const body of [{ text: '🙂🙂' }, { text: '' }, { text: TEXT, speaker: 9 }])
      await (await native('/v1/models/tts', body, { 'x-api-key': a.apiKey })).arrayBuffer();
    expect(await rowsOf(a.accountId)).toEqual([]);
  });
});
