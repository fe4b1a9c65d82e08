/**
 * The engines end to end, in their worker threads, from the manifest the server uses: for 20 generated
 * sentences, ASR(TTS(text)) == text across layouts and sample rates.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineRegistry } from '../../../src/engines/engine-registry.js';
import { resample } from '../../../src/codecs/resample.js';
import { DEMO_SYMBOLS } from '../../../models/generator/demo-voice.js';

interface Chunk {
  samples: Float32Array;
  sampleRate: number;
}
interface Segment {
  text: string;
}

let engines: EngineRegistry;
beforeAll(async () => {
  engines = EngineRegistry.fromManifest('models/kuma-models.json', 'djelia', { intraOpThreads: 1, interOpThreads: 1 });
  await engines.start();
  await resample(new Float32Array(2205), 22050, 16000); // compile the resampler's wasm before anything is timed
}, 120_000);
afterAll(() => engines.close());

/** Deterministic sentences over the demo alphabet: 3–7 words of 1–6 letters, with ɛ ɔ ɲ ŋ and repeats. */
function sentences(count: number): string[] {
  const letters = DEMO_SYMBOLS.filter((s) => s !== ' ');
  let seed = 20261122;
  const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  return Array.from({ length: count }, () =>
    Array.from({ length: 3 + next(5) }, () => Array.from({ length: 1 + next(6) }, () => letters[next(letters.length)]).join('')).join(' '),
  );
}

/** Synthesizes with a TTS engine, at the model's rate. */
async function synthesize(model: string, text: string): Promise<{ samples: Float32Array; rate: number }> {
  const parts: Float32Array[] = [];
  let rate = 0;
  for await (const chunk of engines.get(model)!.stream<Chunk>('synthesize', { text })) {
    parts.push(chunk.samples);
    rate = chunk.sampleRate;
  }
  const joined = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) (joined.set(p, offset), (offset += p.length));
  return { samples: joined, rate };
}

/** Synthesizes and brings the audio to the ASR models' 16 kHz. */
async function speak(model: string, text: string): Promise<Float32Array> {
  const { samples, rate } = await synthesize(model, text);
  return rate === 16000 ? samples : resample(samples, rate, 16000);
}

async function transcribe(model: string, samples: Float32Array): Promise<string> {
  const texts: string[] = [];
  for await (const segment of engines.get(model)!.stream<Segment>('transcribe', { samples })) texts.push(segment.text);
  return texts.join(' ');
}

describe('ASR(TTS(text)) through the engines', () => {
  const texts = sentences(20);
  it.each([
    ['jifili-1', 'sunjata-1'],
    ['djelia-tts-v1', 'djelia-asr-v1'],
    ['djelia-tts-v2', 'sunjata-1'],
  ])('%s → %s returns each of 20 generated sentences exactly', async (tts, asr) => {
    for (const text of texts) expect(await transcribe(asr, await speak(tts, text))).toBe(text);
  });
});
