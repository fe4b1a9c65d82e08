/** Silero VAD on a known speech/silence pattern, and the hysteresis rules on made-up probabilities. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SileroVad, regionsFromProbabilities, DEFAULT_VAD_OPTIONS } from '../../../../src/engines/vad/silero-vad.js';
import { VAD_WINDOW } from '../../../../src/engines/vad/silero-batch.js';
import { speakDemo } from '../../../../models/generator/demo-voice.js';

let vad: SileroVad;
beforeAll(async () => {
  vad = await SileroVad.load({ intraOpThreads: 1, interOpThreads: 1 });
});
afterAll(() => vad.close());

/** Phrases of demo speech separated by known silences; returns the audio and where each phrase is. */
function pattern(phrases: string[], silenceSeconds: number) {
  const rate = 16000;
  const parts: Float32Array[] = [];
  const spans: Array<{ start: number; end: number }> = [];
  let at = silenceSeconds;
  parts.push(new Float32Array(Math.round(silenceSeconds * rate)));
  for (const phrase of phrases) {
    const spoken = speakDemo(phrase, rate);
    spans.push({ start: at + spoken.symbols[0]!.start, end: at + spoken.symbols.at(-1)!.end });
    parts.push(spoken.samples, new Float32Array(Math.round(silenceSeconds * rate)));
    at += spoken.samples.length / rate + silenceSeconds;
  }
  const samples = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) (samples.set(p, offset), (offset += p.length));
  return { samples, spans };
}

describe('SileroVad', () => {
  it('finds speech inside each phrase of demo speech and none in the known silences between them', async () => {
    const { samples, spans } = pattern(['i ni ce', 'a ka kɛnɛ wa', 'n bɛ taa sugu la'], 1.5);
    const regions = await vad.detect(samples);
    // The synthetic vowels are speech-like but not speech: Silero dips inside some phrases (and misses a
    // few short ones entirely, e.g. 'ɔ ɲɔ ŋa'), so a phrase may come out as several regions. That is why
    // long-audio chunking cuts only inside gaps and never drops audio between regions. What must hold: every region lies within a phrase (± padding and one
    // window), and every phrase is found.
    const slack = 0.03 + 0.064;
    for (const region of regions) {
      expect(spans.some((span) => region.start >= span.start - slack && region.end <= span.end + slack)).toBe(true);
    }
    for (const span of spans) {
      expect(regions.some((region) => region.start < span.end && region.end > span.start)).toBe(true);
    }
  });

  it('finds no speech in silence and in low noise', async () => {
    expect(await vad.detect(new Float32Array(16000 * 2))).toEqual([]);
    let seed = 1;
    const noise = Float32Array.from({ length: 32000 }, () => ((seed = (seed * 48271) % 2147483647) / 2147483647 - 0.5) * 0.002);
    expect(await vad.detect(noise)).toEqual([]);
  });

  it('gives one probability per full 512-sample window', async () => {
    expect((await vad.probabilities(new Float32Array(512 * 10 + 100))).length).toBe(10);
  });
});

describe('regionsFromProbabilities', () => {
  const seconds = (windows: number) => (windows * VAD_WINDOW) / 16000;
  const opts = { ...DEFAULT_VAD_OPTIONS, speechPadMs: 0 };

  it('bridges dips shorter than the minimum silence', () => {
    const probs = [...Array(20).fill(0.9), ...Array(5).fill(0.1), ...Array(20).fill(0.9), ...Array(30).fill(0)];
    expect(regionsFromProbabilities(probs, probs.length * VAD_WINDOW, opts)).toEqual([{ start: 0, end: seconds(45) }]);
  });

  it('splits at silences longer than the minimum and drops blips shorter than the minimum speech', () => {
    const probs = [...Array(20).fill(0.9), ...Array(20).fill(0), ...Array(3).fill(0.9), ...Array(20).fill(0), ...Array(20).fill(0.8)];
    expect(regionsFromProbabilities(probs, probs.length * VAD_WINDOW, opts)).toEqual([
      { start: 0, end: seconds(20) },
      { start: seconds(63), end: seconds(83) },
    ]);
  });

  it('uses hysteresis: values between the two thresholds neither start nor end speech', () => {
    const probs = [0.4, 0.4, 0.9, ...Array(20).fill(0.4), ...Array(20).fill(0.1)];
    const regions = regionsFromProbabilities(probs, probs.length * VAD_WINDOW, opts);
    expect(regions).toEqual([{ start: seconds(2), end: seconds(23) }]);
  });
});
