/**
 * Every demo voice speaks printable ASCII through POST /compat/v1/audio/speech: the Djelia SDKs' own test
 * texts ("Streaming test text", "Hello, how are you?"), and any random printable ASCII text that has a
 * letter or a digit, answer 200 with audio, whose transcript by the demo ASR is the text as read (q v x
 * spelled k f ks, digits as Bambara number words, punctuation and ASCII symbols as pauses). Text over the
 * demo alphabet still comes back exactly.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { decodeSpeech, transcribeWith } from '../helpers/speech-audio.js';
import { readDigits } from '../../src/engines/tts/bambara-numbers.js';
import { DEMO_SYMBOLS } from '../../models/generator/demo-voice.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 4);
/** Each voice the demo serves: jifili-1's one voice, djelia-tts-v2's three names, djelia-tts-v1's five speakers. */
const VOICES: Array<{ model: string; voice?: string; djelia?: { speaker: number } }> = [
  { model: 'jifili-1', voice: 'moussa' },
  ...['moussa', 'sekou', 'seydou'].map((voice) => ({ model: 'djelia-tts-v2', voice })),
  ...[0, 1, 2, 3, 4].map((speaker) => ({ model: 'djelia-tts-v1', djelia: { speaker } })),
];
const name = (v: (typeof VOICES)[number]) => `${v.model} ${v.voice ?? `speaker ${v.djelia!.speaker}`}`;

let t: TestServer;
beforeAll(async () => {
  // Before the retirement date, so the legacy voices are offered too.
  t = await startTestServer({ clock: () => new Date('2026-09-01T00:00:00Z'), config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

/** Speaks `input` with a voice through the HTTP API, as 24 kHz pcm; the status and, on 200, the transcript. */
async function speakAndHear(voice: (typeof VOICES)[number], input: string): Promise<{ status: number; heard?: string; body?: string }> {
  const res = await fetch(`${t.baseUrl}/compat/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...voice, input, response_format: 'pcm' }),
  });
  if (res.status !== 200) return { status: res.status, body: await res.text() };
  const { samples, rate } = await decodeSpeech('pcm', new Uint8Array(await res.arrayBuffer()));
  return { status: 200, heard: await transcribeWith(t.server.engines!, samples, rate) };
}

/** How ASCII text is read, from the documented rules (written apart from speech-text.ts). */
function readAloud(text: string): string {
  return text
    .toLowerCase()
    .replace(/['`]/g, '')
    .replace(/q/g, 'k')
    .replace(/v/g, 'f')
    .replace(/x/g, 'ks')
    .replace(/[0-9]+/g, (digits) => ` ${readDigits(digits)} `)
    .replace(/[^a-z\p{L}]+/gu, ' ')
    .trim();
}

describe('every demo voice speaks printable ASCII', () => {
  it.each(VOICES.map((v) => [name(v), v] as const))('%s: the Djelia SDK test texts, read as Bambara spells them', async (_, voice) => {
    expect(await speakAndHear(voice, 'Streaming test text')).toEqual({ status: 200, heard: 'streaming test tekst' });
    expect(await speakAndHear(voice, 'Hello, how are you?')).toEqual({ status: 200, heard: 'hello how are you' });
    expect(await speakAndHear(voice, 'Quiz: 2 + 2 = 4 ~ vox')).toEqual({ status: 200, heard: 'kuiz fila fila naani foks' });
  });

  it('any printable ASCII text with a letter or digit: 200 with audio that reads it, for every voice', async () => {
    const printable = fc
      .string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((u) => String.fromCharCode(u)), minLength: 1, maxLength: 30 })
      .filter((s) => /[A-Za-z0-9]/.test(s));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...VOICES), printable, async (voice, input) => {
        expect(await speakAndHear(voice, input), `${name(voice)} ${JSON.stringify(input)}`).toEqual({ status: 200, heard: readAloud(input) });
      }),
      { numRuns: RUNS * VOICES.length, seed: 415 },
    );
  }, 120_000);

  it('text over the demo alphabet still comes back exactly, for every voice', async () => {
    const letters = DEMO_SYMBOLS.filter((s) => s !== ' ');
    const word = fc.array(fc.constantFrom(...letters), { minLength: 1, maxLength: 6 }).map((a) => a.join(''));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...VOICES), fc.array(word, { minLength: 1, maxLength: 5 }), async (voice, words) => {
        expect(await speakAndHear(voice, words.join(' '))).toEqual({ status: 200, heard: words.join(' ') });
      }),
      { numRuns: RUNS * VOICES.length, seed: 416 },
    );
  }, 120_000);

  it('text with nothing to say is still a clear 400 naming input, and symbols beyond ASCII are named', async () => {
    for (const input of ['...', '+=~|', '€ 5']) {
      const { status, body } = await speakAndHear(VOICES[0]!, input);
      expect(status, input).toBe(400);
      expect(JSON.parse(body!).error).toMatchObject({ code: 'invalid_value', param: 'input' });
    }
  });
});
