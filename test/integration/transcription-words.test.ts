/**
 * Word timestamps through the openai SDK: `timestamp_granularities: ['word']` with verbose_json gives the
 * SDK's typed `words` [{word, start, end}] from the CTC models' alignment — each word inside its segment,
 * the words of a segment joined by spaces its text, each at the known position of the demo speech within a
 * model frame — on both prefixes and for the legacy NeMo-layout model; over random demo utterances too.
 * Without the granularity there are no words (as OpenAI answers); a Whisper model, whose timestamps are per
 * segment, gives segments and no words rather than made-up ones.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import OpenAI, { toFile } from 'openai';
import type { TranscriptionVerbose } from 'openai/resources/audio/transcriptions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { wavBytes } from '../helpers/audio.js';
import { DEMO_SYMBOLS, speakDemo } from '../../models/generator/demo-voice.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 12);
/** One 20 ms model frame, plus the 5 ms of window a CTC frame spans beyond its hop. */
const FRAME = 0.025;
const RATE = 16000;

interface KnownWord {
  word: string;
  start: number;
  end: number;
}

/**
 * Phrases of demo speech with `pauses[i]` seconds of silence before phrase i > 0, and where each word was
 * spoken: from its first letter's start to its last letter's end (the demo voice speaks the space too).
 * After a pause shorter than the 0.5 s that ends a word by itself, the phrase starts with a spoken space,
 * as speech would: silence that short is not a word boundary to the model.
 */
function utterance(phrases: string[], pauses: number[] = []): { wav: Buffer; words: KnownWord[] } {
  const parts: Float32Array[] = [];
  const words: KnownWord[] = [];
  let at = 0;
  phrases.forEach((phrase, i) => {
    if (i > 0) {
      const pause = pauses[i - 1] ?? 1;
      parts.push(new Float32Array(Math.round(pause * RATE)));
      at += pause;
    }
    const spoken = speakDemo(i > 0 && (pauses[i - 1] ?? 1) < 0.5 ? ` ${phrase}` : phrase, RATE);
    let current: KnownWord | null = null;
    for (const { symbol, start, end } of spoken.symbols) {
      if (symbol === ' ') current = null;
      else if (current) ((current.word += symbol), (current.end = at + end));
      else words.push((current = { word: symbol, start: at + start, end: at + end }));
    }
    parts.push(spoken.samples);
    at += spoken.samples.length / RATE;
  });
  const samples = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) (samples.set(p, offset), (offset += p.length));
  return { wav: wavBytes(samples, RATE), words };
}

/** The rules every verbose transcript with words keeps, whatever was said. */
function expectWordsInSegments(res: TranscriptionVerbose): void {
  const words = res.words!;
  let next = 0;
  for (const segment of res.segments!) {
    const inside: typeof words = [];
    while (next < words.length && words[next]!.start < segment.end) inside.push(words[next++]!);
    expect(inside.map((w) => w.word).join(' ')).toBe(segment.text);
    for (const w of inside) {
      expect(w.start).toBeGreaterThanOrEqual(segment.start);
      expect(w.end).toBeLessThanOrEqual(segment.end);
      expect(w.end).toBeGreaterThan(w.start);
    }
  }
  expect(next).toBe(words.length);
  expect(words.map((w) => w.word).join(' ')).toBe(res.text);
}

function expectAtKnownPlaces(got: Array<{ word: string; start: number; end: number }>, known: KnownWord[]): void {
  expect(got.map((w) => w.word)).toEqual(known.map((w) => w.word));
  got.forEach((w, i) => {
    expect(Math.abs(w.start - known[i]!.start), `${w.word} start`).toBeLessThanOrEqual(FRAME);
    expect(Math.abs(w.end - known[i]!.end), `${w.word} end`).toBeLessThanOrEqual(FRAME);
  });
}

describe('CTC models', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ clock: () => new Date('2026-09-01T00:00:00Z'), config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
    await t.server.enginesReady;
  }, 120_000);
  afterAll(() => t.close());

  const PHRASES = ['i ni ce', 'n fa ni n ba bɛ malo dun', 'ɔ ɲɔ ŋa kɛnɛ'];
  const speech = utterance(PHRASES);

  for (const prefix of ['/compat/v1', '/openai/v1']) {
    for (const model of ['sunjata-1', 'djelia-asr-v1']) {
      it(`${prefix}, ${model}: words [{word, start, end}] in the SDK's types, inside their segments, where they were spoken`, async () => {
        const client = new OpenAI({ apiKey: t.apiKey, baseURL: t.baseUrl + prefix, maxRetries: 0 });
        const res = await client.audio.transcriptions.create({
          file: await toFile(speech.wav, 'speech.wav', { type: 'audio/wav' }),
          model,
          response_format: 'verbose_json',
          timestamp_granularities: ['word', 'segment'],
        });
        expect(res.segments!.map((s) => s.text)).toEqual(PHRASES);
        const words: Array<{ word: string; start: number; end: number }> | undefined = res.words; // typed by the SDK
        expect(words!.every((w) => Object.keys(w).sort().join() === 'end,start,word')).toBe(true);
        expectWordsInSegments(res);
        expectAtKnownPlaces(words!, speech.words);
      });
    }
  }

  it('no words without the word granularity, as OpenAI answers', async () => {
    const client = new OpenAI({ apiKey: t.apiKey, baseURL: `${t.baseUrl}/openai/v1`, maxRetries: 0 });
    for (const granularities of [undefined, ['segment' as const]]) {
      const res = await client.audio.transcriptions.create({
        file: await toFile(speech.wav, 'speech.wav', { type: 'audio/wav' }),
        model: 'sunjata-1',
        response_format: 'verbose_json',
        ...(granularities ? { timestamp_granularities: granularities } : {}),
      });
      expect(res.segments!.length).toBe(3);
      expect('words' in res).toBe(false);
    }
  });

  it('random demo utterances: every word, in order, inside its segment, at its place', async () => {
    const letters = DEMO_SYMBOLS.filter((s) => s !== ' ');
    const word = fc.array(fc.constantFrom(...letters), { minLength: 1, maxLength: 7 }).map((a) => a.join(''));
    const phrase = fc.array(word, { minLength: 1, maxLength: 5 }).map((w) => w.join(' '));
    // Pauses below and above the 0.5 s that starts a new segment.
    const phrases = fc.array(fc.tuple(phrase, fc.constantFrom(0.2, 0.4, 0.7, 1.5)), { minLength: 1, maxLength: 4 });
    const client = new OpenAI({ apiKey: t.apiKey, baseURL: `${t.baseUrl}/compat/v1`, maxRetries: 0 });
    await fc.assert(
      fc.asyncProperty(phrases, async (list) => {
        const said = utterance(
          list.map(([p]) => p),
          list.slice(1).map(([, pause]) => pause),
        );
        const res = await client.audio.transcriptions.create({
          file: await toFile(said.wav, 'speech.wav', { type: 'audio/wav' }),
          model: 'sunjata-1',
          response_format: 'verbose_json',
          timestamp_granularities: ['word'],
        });
        expectWordsInSegments(res);
        expectAtKnownPlaces(res.words!, said.words);
      }),
      { numRuns: RUNS, seed: 909 },
    );
  }, 120_000);
});

describe('a Whisper model', () => {
  let t: TestServer;
  beforeAll(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-whisper-words-'));
    const manifest = path.join(dir, 'kuma-models.json');
    const models = [
      { id: 'sunjata-1', engine: 'whisper', dir: path.resolve('models/demo/whisper') },
      { id: 'vad', engine: 'silero-vad', dir: path.resolve('models') },
    ];
    fs.writeFileSync(manifest, JSON.stringify({ models }));
    t = await startTestServer({ config: { modelsManifest: manifest, demoPack: false } });
    await t.server.enginesReady;
    fs.rmSync(dir, { recursive: true, force: true });
  }, 120_000);
  afterAll(() => t?.close());

  it('times segments only: verbose_json has its segments and no words, rather than words it did not time', async () => {
    const client = new OpenAI({ apiKey: t.apiKey, baseURL: `${t.baseUrl}/openai/v1`, maxRetries: 0 });
    const res = await client.audio.transcriptions.create({
      file: await toFile(utterance(['i ni ce']).wav, 'speech.wav', { type: 'audio/wav' }),
      model: 'sunjata-1',
      response_format: 'verbose_json',
      timestamp_granularities: ['word'],
    });
    expect(res.segments!.length).toBeGreaterThan(0);
    expect(res.text.length).toBeGreaterThan(0);
    expect('words' in res).toBe(false);
  });
});
