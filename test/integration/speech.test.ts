/**
 * POST /audio/speech with the demo models: every served format decodes back to the right rate and
 * duration, and transcribing it returns the input text; SSE deltas rebuild the raw stream; every voice,
 * format, option and length rule answers with its status, type, code and param; the ledger matches usage.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { chargesSettled } from '../helpers/settled.js';
import { decodeSpeech, transcribeWith } from '../helpers/speech-audio.js';
import { sseJson } from '../helpers/sse.js';
import { speakDemo } from '../../models/generator/demo-voice.js';

const TEXT = 'i ni ce a ka kɛnɛ';
const SPOKEN_SECONDS = speakDemo(TEXT, 16000).samples.length / 16000;

let t: TestServer;
let now = new Date('2026-09-01T00:00:00Z'); // before retirement: the legacy models still serve
beforeAll(async () => {
  t = await startTestServer({ clock: () => now, config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

const speech = (body: Record<string, unknown>, apiKey = t.apiKey) =>
  fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const transcribe = (samples: Float32Array, rate: number) => transcribeWith(t.server.engines!, samples, rate);

describe('every served format', () => {
  const RATES: Record<string, number> = {
    mp3: 24000,
    wav: 24000,
    pcm: 24000,
    opus: 24000,
    ulaw: 8000,
    alaw: 8000,
    l16_8000: 8000,
    l16_16000: 16000,
    fmp4: 24000,
  };
  const MEDIA: Record<string, string> = {
    mp3: 'audio/mpeg',
    wav: 'audio/wav',
    pcm: 'audio/pcm',
    opus: 'audio/ogg',
    fmp4: 'audio/mp4',
    ulaw: 'audio/basic',
    alaw: 'audio/x-alaw-basic',
    l16_8000: 'audio/pcm;rate=8000;channels=1;encoding=signed-int;bits=16;endianness=little',
    l16_16000: 'audio/pcm;rate=16000;channels=1;encoding=signed-int;bits=16;endianness=little',
  };
  it.each(Object.keys(RATES))('%s decodes back to its rate and duration', async (format) => {
    const res = await speech({ model: 'jifili-1', input: TEXT, voice: 'alloy', response_format: format });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(MEDIA[format]);
    const { samples, rate } = await decodeSpeech(format, new Uint8Array(await res.arrayBuffer()));
    if (!['mp3', 'opus', 'fmp4'].includes(format)) expect(rate).toBe(RATES[format]);
    // ± one codec frame plus encoder delay/padding (mp3 adds 1105 samples at 24 kHz; AAC primes 1024).
    expect(Math.abs(samples.length / rate - SPOKEN_SECONDS)).toBeLessThan(0.1);
    // Telephony rates cannot carry the demo voice's upper formants: the transcript check is for the wideband formats.
    if (rate >= 16000) expect(await transcribe(samples, rate)).toBe(TEXT);
  });
});

describe('streaming formats', () => {
  it('SSE deltas concatenate to the same audio as the raw stream, and done carries the usage', async () => {
    const raw = new Uint8Array(await (await speech({ input: TEXT, response_format: 'pcm' })).arrayBuffer());
    const res = await speech({ input: TEXT, response_format: 'pcm', stream_format: 'sse' });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = sseJson(await res.text());
    const deltas = events.filter((e) => e.type === 'speech.audio.delta');
    expect(Buffer.concat(deltas.map((e) => Buffer.from(e.audio, 'base64')))).toEqual(Buffer.from(raw));
    expect(events.at(-1)).toEqual({ type: 'speech.audio.done', usage: { input_tokens: [...TEXT].length, output_tokens: 0, total_tokens: [...TEXT].length } });
  });

  it('the openai SDK gets the audio bytes', async () => {
    const client = new OpenAI({ apiKey: t.apiKey, baseURL: `${t.baseUrl}/compat/v1`, maxRetries: 0 });
    const res = await client.audio.speech.create({ model: 'tts-1', voice: 'nova', input: TEXT, response_format: 'wav' });
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(Buffer.from(bytes.subarray(0, 4)).toString()).toBe('RIFF');
  });

  it('charges exactly the characters delivered, equal to the usage reported', async () => {
    const account = await t.newAccount(1_000_000);
    const res = await speech({ input: TEXT, response_format: 'mp3' }, account.apiKey);
    await res.arrayBuffer();
    await chargesSettled(t); // charged once the answer was delivered
    const rows = await t.server.store.listUsage({ accountId: account.accountId });
    expect(rows.map((r) => [r.requestId, r.model, r.unit, r.quantity, r.costMicros])).toEqual([
      [res.headers.get('x-request-id'), 'jifili-1', 'character', [...TEXT].length, [...TEXT].length * 15],
    ]);
  });
});

async function expectError(res: Response, status: number, code: string, param: string | null) {
  const body = (await res.json()) as any;
  expect([res.status, body.error.type, body.error.code, body.error.param]).toEqual([
    status,
    status === 402 ? 'insufficient_quota' : 'invalid_request_error',
    code,
    param,
  ]);
}

describe('rules', () => {
  it('jifili-1 voices: moussa and its aliases; anything else is 400 unsupported_voice', async () => {
    for (const voice of ['moussa', 'alloy', 'nova', 'coral', 'Moussa']) expect((await speech({ input: 'a', voice, response_format: 'pcm' })).status).toBe(200);
    for (const voice of ['sekou', 'echo', 'shimmer', 'bob']) await expectError(await speech({ input: 'a', voice }), 400, 'unsupported_voice', 'voice');
  });

  it('jifili-1 formats: the nine it serves; flac, aac, wav_8k, ulaw_8k and unknown names are 422 invalid_request', async () => {
    for (const format of ['flac', 'aac', 'wav_8k', 'ulaw_8k', 'ogg', 'MP3'])
      await expectError(await speech({ input: 'a', response_format: format }), 422, 'invalid_request', 'response_format');
  });

  it('legacy models serve their eight formats and answer 400 for the others', async () => {
    for (const format of ['aac', 'flac', 'wav_8k', 'ulaw_8k'])
      expect((await speech({ model: 'djelia-tts-v2', input: 'a', response_format: format })).status).toBe(200);
    for (const format of ['alaw', 'l16_8000', 'fmp4', 'ulaw'])
      await expectError(await speech({ model: 'djelia-tts-v1', input: 'a', response_format: format }), 400, 'invalid_value', 'response_format');
  });

  it('legacy voices: v2 takes voices, aliases and descriptions; v1 takes speakers 0–4', async () => {
    for (const voice of ['sekou', 'seydou', 'echo', 'verse'])
      expect((await speech({ model: 'djelia-tts-v2', input: 'a', voice, response_format: 'pcm' })).status).toBe(200);
    expect((await speech({ model: 'djelia-tts-v2', input: 'a', voice: 'x', djelia: { description: 'Seydou, calm' }, response_format: 'pcm' })).status).toBe(
      400,
    );
    expect((await speech({ model: 'djelia-tts-v2', input: 'a', djelia: { description: 'Seydou speaking slowly' }, response_format: 'pcm' })).status).toBe(200);
    const loud = new Uint8Array(await (await speech({ model: 'djelia-tts-v1', input: 'a', response_format: 'pcm', djelia: { speaker: 0 } })).arrayBuffer());
    const soft = new Uint8Array(await (await speech({ model: 'djelia-tts-v1', input: 'a', response_format: 'pcm', djelia: { speaker: 4 } })).arrayBuffer());
    expect(loud.length).toBe(soft.length);
    expect(Buffer.from(loud).equals(Buffer.from(soft))).toBe(false); // the demo speakers differ in gain
    await expectError(await speech({ model: 'djelia-tts-v1', input: 'a', djelia: { speaker: 5 } }), 400, 'invalid_value', 'djelia.speaker');
  });

  it('speech options are validated with their bounds, and speed/instructions are ignored', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ chunk_size: 0.05 }, 'djelia.chunk_size'],
      [{ chunk_size: 2.5 }, 'djelia.chunk_size'],
      [{ temperature: 2.1 }, 'djelia.temperature'],
      [{ top_p: 0 }, 'djelia.top_p'],
      [{ top_p: 1.1 }, 'djelia.top_p'],
      [{ repetition_penalty: 0 }, 'djelia.repetition_penalty'],
      [{ repetition_penalty: 2.01 }, 'djelia.repetition_penalty'],
      [{ description: 'x'.repeat(501) }, 'djelia.description'],
    ];
    for (const [djelia, param] of cases) await expectError(await speech({ input: 'a', djelia }), 400, 'invalid_value', param);
    const ok = await speech({
      input: 'a',
      response_format: 'pcm',
      speed: 4,
      instructions: 'whisper it',
      djelia: { chunk_size: 2, temperature: 0, top_p: 1, repetition_penalty: 2, speaker: 3 },
    });
    expect(ok.status).toBe(200);
  });

  it('input: required, not empty, at most 1000 characters for jifili-1 (code points)', async () => {
    await expectError(await speech({ voice: 'moussa' }), 400, 'missing_required_parameter', 'input');
    await expectError(await speech({ input: '   ' }), 400, 'invalid_value', 'input');
    await expectError(await speech({ input: 'ɛ'.repeat(1001) }), 400, 'invalid_value', 'input');
    expect((await speech({ input: 'ɛ'.repeat(1000), response_format: 'pcm' })).status).toBe(200);
    expect((await speech({ model: 'djelia-tts-v1', input: 'a'.repeat(1200), response_format: 'pcm' })).status).toBe(200);
  });

  it('stream_format must be audio or sse; unknown and retired models are 404; a transcription model is 400', async () => {
    await expectError(await speech({ input: 'a', stream_format: 'chunks' }), 400, 'invalid_value', 'stream_format');
    await expectError(await speech({ model: 'tts-9', input: 'a' }), 404, 'model_not_found', 'model');
    await expectError(await speech({ model: 'sunjata-1', input: 'a' }), 400, 'invalid_value', 'model');
    now = new Date('2026-09-20T00:00:00Z');
    try {
      await expectError(await speech({ model: 'djelia-tts-v1', input: 'a' }), 404, 'model_not_found', 'model');
    } finally {
      now = new Date('2026-09-01T00:00:00Z');
    }
  });

  it('402 before any synthesis when the balance cannot cover the input', async () => {
    const poor = await t.newAccount(10); // 'a ka' = 4 characters × 15 micros
    await expectError(await speech({ input: 'a ka' }, poor.apiKey), 402, 'insufficient_quota', null);
    expect(await t.server.store.listUsage({ accountId: poor.accountId })).toEqual([]);
  });
});
