/**
 * Transcripts do not depend on how the audio arrives: for the demo ctc-wav2vec2, ctc-nemo and whisper
 * models, two minutes of demo speech (long silences, speech that runs on past a chunk, short pauses) give
 * the same segments — texts, word times, everything — fed whole or as windows of 1 s, 7.3 s, 10 s or 45 s,
 * and through the real pipeline (WAV upload → DecoderPool windows → ModelEngine job with streamed input).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { speakDemo } from '../../../../models/generator/demo-voice.js';
import { loadRunner } from '../../../../src/engines/runner-registry.js';
import { ModelEntrySchema } from '../../../../src/engines/manifest.js';
import type { Runner, RunnerContext } from '../../../../src/engines/runner.js';
import { ModelEngine } from '../../../../src/engines/runtime/model-engine.js';
import { DecoderPool } from '../../../../src/codecs/decode/decoder-pool.js';
import { wavBytes } from '../../../helpers/audio.js';

const RATE = 16000;
const MODELS = [
  ['ctc-wav2vec2', 'models/demo/ctc-wav2vec2'],
  ['ctc-nemo', 'models/demo/ctc-nemo'],
  ['whisper', 'models/demo/whisper'],
] as const;

/** Deterministic demo speech: phrases with pauses of every kind, a 40 s silence, 30+ s without a pause, 35 s of silence at the end. */
function longAudio(): Float32Array {
  const words = ['i', 'ni', 'ce', 'n', 'fa', 'ba', 'bɛ', 'malo', 'dun', 'kɛnɛ', 'ɲɔ', 'ŋa', 'sugu', 'taa', 'tanasaba'];
  let seed = 11;
  const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  const parts: Float32Array[] = [];
  for (let i = 0; i < 14; i++) {
    parts.push(speakDemo(Array.from({ length: 1 + Math.floor(random() * 10) }, () => words[Math.floor(random() * words.length)]).join(' '), RATE).samples);
    const pause = i === 4 ? 40 : i % 5 === 2 ? 0.05 : 0.2 + random() * 1.5;
    parts.push(new Float32Array(Math.round(pause * RATE)));
  }
  parts.push(speakDemo(Array.from({ length: 45 }, (_, k) => words[k % words.length]).join(' '), RATE).samples);
  // Speech, a pause, more speech, then silence to the end: where the last cut goes depends on nothing following.
  parts.push(new Float32Array(RATE * 0.8), speakDemo('i ni ce sugu', RATE).samples, new Float32Array(RATE * 35));
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

const audio = longAudio();
const ctx = (input?: AsyncIterable<unknown>): RunnerContext => ({
  signal: new AbortController().signal,
  checkpoint: async () => {},
  ...(input ? { input } : {}),
});

async function* inWindows(samples: Float32Array, seconds: number): AsyncGenerator<Float32Array> {
  const n = Math.round(seconds * RATE);
  for (let at = 0; at < samples.length; at += n) yield samples.slice(at, at + n);
}

async function collect(iterable: AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe.each(MODELS)("%s: windowed input gives the whole input's transcript", (engine, dir) => {
  let runner: Runner;
  let whole: unknown[];
  beforeAll(async () => {
    const absolute = path.resolve(dir);
    runner = await loadRunner({ entry: ModelEntrySchema.parse({ id: engine, engine, dir: absolute }), dir: absolute, intraOpThreads: 1, interOpThreads: 1 });
    whole = await collect(runner.call('transcribe', { samples: audio }, ctx()) as AsyncIterable<unknown>);
  }, 120_000);
  afterAll(() => runner?.close());

  it('is long enough to be cut into several chunks, with speech in it', () => {
    expect(audio.length / RATE).toBeGreaterThan(100);
    expect(whole.length).toBeGreaterThan(8);
  });

  it.each([1, 7.3, 10, 45])(
    'windows of %s s',
    async (seconds) => {
      expect(await collect(runner.call('transcribe', {}, ctx(inWindows(audio, seconds))) as AsyncIterable<unknown>)).toEqual(whole);
    },
    120_000,
  );

  it('through the pipeline: WAV upload → decoder windows → engine job with streamed input', async () => {
    const absolute = path.resolve(dir);
    const model = new ModelEngine(
      { id: engine, aliases: [], engine, dir: absolute, absoluteDir: absolute, replicas: 1, maxQueue: 2, options: {} },
      { intraOpThreads: 1, interOpThreads: 1 },
    );
    const pool = new DecoderPool({ size: 1 });
    try {
      await model.start();
      const stream = await pool.open(wavBytes(audio, RATE), { targetRate: RATE });
      const segments = await collect(model.stream('transcribe', {}, undefined, stream));
      // The WAV holds 16-bit samples: compare with the whole transcript of the same quantised audio.
      const quantised = Float32Array.from(audio, (v) => Math.round(Math.max(-1, Math.min(1, v)) * 32767) / 32768);
      expect(segments).toEqual(await collect(runner.call('transcribe', { samples: quantised }, ctx()) as AsyncIterable<unknown>));
      expect(stream.summary?.durationSeconds).toBeCloseTo(audio.length / RATE, 6);
    } finally {
      await Promise.all([model.close(), pool.close()]);
    }
  }, 120_000);
});
