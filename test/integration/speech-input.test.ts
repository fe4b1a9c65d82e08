/**
 * POST /audio/speech with text a voice cannot say as written (issue P6 #8), through a real server with the
 * demo models, for every TTS model it serves (jifili-1 = vits-hf, djelia-tts-v1 = vits-sherpa,
 * djelia-tts-v2 = vits-piper): digits are read as Bambara number words (the audio transcribes to them);
 * emoji, lone surrogates, control characters and letters the voice lacks are 400 invalid_value (param
 * input) naming them, before any synthesis or charge; and for random strings the answer is 200 audio or
 * that 400, never a 500. Also the round trip of issue P6 #9 as its reporter ran it: speech wav → upload.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { decodeAudio } from '../../src/codecs/decode/decode-audio.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 60);
const MODELS = ['jifili-1', 'djelia-tts-v1', 'djelia-tts-v2'] as const;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ clock: () => new Date('2026-09-01T00:00:00Z'), config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

const speech = (body: Record<string, unknown>, apiKey = t.apiKey) =>
  fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

async function transcribe(wav: Uint8Array): Promise<string> {
  const { samples } = await decodeAudio(wav, { targetRate: 16000 });
  const texts: string[] = [];
  for await (const s of t.server.engines!.get('sunjata-1')!.stream<{ text: string }>('transcribe', { samples })) texts.push(s.text);
  return texts.join(' ');
}

async function expectUnspeakable(res: Response, named: string[]): Promise<void> {
  const body = (await res.json()) as { error: { message: string; type: string; code: string; param: string } };
  expect([res.status, body.error.type, body.error.code, body.error.param]).toEqual([400, 'invalid_request_error', 'invalid_value', 'input']);
  for (const name of named) expect(body.error.message).toContain(name);
}

describe.each(MODELS)('%s', (model) => {
  it('reads digits as Bambara number words: "123" is spoken, and heard, as kɛmɛ ni mugan ni saba', async () => {
    const res = await speech({ model, input: '123', response_format: 'wav' });
    expect(res.status).toBe(200);
    expect(await transcribe(new Uint8Array(await res.arrayBuffer()))).toBe('kɛmɛ ni mugan ni saba');
  });

  it('400 invalid_value naming emoji, lone surrogates, control characters and letters it lacks; nothing charged', async () => {
    const account = await t.newAccount(1_000_000);
    await expectUnspeakable(await speech({ model, input: 'i ni ce 😀' }, account.apiKey), ['U+1F600 "😀"']);
    await expectUnspeakable(await speech({ model, input: 'a\ud800b\udc00' }, account.apiKey), ['U+D800', 'U+DC00']);
    await expectUnspeakable(await speech({ model, input: 'a\u0007b\u0000' }, account.apiKey), ['U+0007', 'U+0000']);
    await expectUnspeakable(await speech({ model, input: 'дом' }, account.apiKey), ['U+0434 "д"']);
    await expectUnspeakable(await speech({ model, input: '..!?' }, account.apiKey), ['nothing']);
    expect(await t.server.store.listUsage({ accountId: account.accountId })).toEqual([]);
    expect((await t.server.store.getAccount(account.accountId))!.balanceMicros).toBe(1_000_000);
  });

  it('names at most eight characters, then how many more', async () => {
    await expectUnspeakable(await speech({ model, input: '😀😁😂🤣😃😄😅😆😉😊' }), ['U+1F600', 'U+1F606', 'and 2 more']);
  });
});

describe('round trip through the API (issue P6 #9)', () => {
  it('the issue’s sentence ×4 → jifili-1 wav → sunjata-1 transcription is the sentence ×4', async () => {
    const input = Array(4).fill('i ni ce aw ni sogoma an bɛ taa so kɔnɔ').join(' ');
    const wav = await (await speech({ model: 'jifili-1', input, response_format: 'wav' })).arrayBuffer();
    const form = new FormData();
    form.append('file', new Blob([wav], { type: 'audio/wav' }), 'speech.wav');
    form.append('model', 'sunjata-1');
    form.append('response_format', 'text');
    const res = await fetch(`${t.baseUrl}/openai/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form });
    expect([res.status, (await res.text()).trim()]).toEqual([200, input]);
  });
});

describe('any input', () => {
  /** Characters a hostile client sends: the demo letters, digits, punctuation, emoji, surrogates, controls, anything. */
  const char = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...'abcdeɛfghijklmnɲŋoɔprstuwyzAƐ ') },
    { weight: 2, arbitrary: fc.constantFrom(...'0123456789') },
    { weight: 2, arbitrary: fc.constantFrom(...`.,;:!?'"«»()-–—…/%&*@#_`) },
    { weight: 1, arbitrary: fc.constantFrom('😀', '👍🏽', '🇲🇱', '€', '+', '\u200b', '\u0301', 'é', 'x', 'д', '١') },
    { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((u) => String.fromCharCode(u)) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 0x1f }).map((u) => String.fromCharCode(u)) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  );

  it('is answered 200 audio or 400 invalid_value param input, never a 500, on every TTS model', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(char, { minLength: 1, maxLength: 40 }).map((a) => a.join('')),
        fc.constantFrom(...MODELS),
        async (input, model) => {
          fc.pre(input.trim() !== ''); // blank input is the schema's own 400
          const res = await speech({ model, input, response_format: 'pcm' });
          if (res.status === 200) {
            expect(res.headers.get('content-type')).toBe('audio/pcm');
            expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
          } else {
            await expectUnspeakable(res, []);
          }
        },
      ),
      { numRuns: RUNS, seed: 20260908 },
    );
  }, 120_000);
});
