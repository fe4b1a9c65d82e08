/**
 * Whisper log-mel features: the plain reference checked on properties it must have (3000 frames, the
 * max − 8 clamp, a pure tone in the right mel bin, agreement with transformers.js' extractor), and the
 * fast extractor held to the reference on generated audio for 80 and 128 mels.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WhisperFeatureExtractor as HfWhisperFeatureExtractor } from '@huggingface/transformers';
import {
  WHISPER_FRAMES,
  WhisperFeatureExtractor,
  referenceLogMel,
  referenceMelFromPower,
  referencePowerSpectrogram,
  type WhisperMels,
} from '../../../../src/engines/asr/whisper-features.js';

/**
 * Largest |fast − reference| allowed, in feature units ((log10 + 4) / 4): 1e-4 is 4e-4 in log10, i.e.
 * power within 0.1%. The fast path computes in float32, the reference in float64; observed differences
 * are ≤ 5e-6 on ordinary signals and ≈ 3e-5 at worst (faint noise just above the floor after a loud tone).
 */
const TOLERANCE = 1e-4;
const RATE = 16000;

/** Deterministic uniform noise in [−1, 1). */
function noise(seconds: number, seed: number, amplitude: number): Float32Array {
  const out = new Float32Array(Math.round(seconds * RATE));
  let state = seed >>> 0;
  for (let i = 0; i < out.length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = amplitude * (state / 2 ** 31 - 1);
  }
  return out;
}

function tone(seconds: number, hz: number, amplitude = 0.5): Float32Array {
  return Float32Array.from({ length: Math.round(seconds * RATE) }, (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / RATE));
}

/** Voiced-speech-like: a gliding 110–170 Hz fundamental, 30 harmonics shaped by two moving formants, syllable-rate envelope. */
function harmonics(seconds: number): Float32Array {
  const out = new Float32Array(Math.round(seconds * RATE));
  let phase = 0;
  for (let i = 0; i < out.length; i++) {
    const t = i / RATE;
    const f0 = 140 + 30 * Math.sin(2 * Math.PI * 0.7 * t);
    phase += (2 * Math.PI * f0) / RATE;
    const f1 = 500 + 250 * Math.sin(2 * Math.PI * 1.3 * t);
    const f2 = 1500 + 700 * Math.sin(2 * Math.PI * 0.9 * t);
    let sample = 0;
    for (let h = 1; h <= 30; h++) {
      const f = h * f0;
      sample += ((Math.exp(-(((f - f1) / 150) ** 2)) + 0.5 * Math.exp(-(((f - f2) / 250) ** 2)) + 0.02) * Math.sin(h * phase)) / h;
    }
    out[i] = 0.3 * sample * Math.max(0, Math.sin(2 * Math.PI * 2.5 * t));
  }
  return out;
}

function concat(...parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, (at += p.length) - p.length);
  return out;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
}

function range(x: Float32Array): { min: number; max: number } {
  let min = Infinity;
  let max = -Infinity;
  for (const v of x) [min, max] = [Math.min(min, v), Math.max(max, v)];
  return { min, max };
}

/** Mel bin with the most energy in frame t. */
function loudestBin(features: Float32Array, nMels: number, t: number): number {
  let best = 0;
  for (let m = 1; m < nMels; m++) if (features[m * WHISPER_FRAMES + t]! > features[best * WHISPER_FRAMES + t]!) best = m;
  return best;
}

/** Slaney mel scale, written out here independently of the filterbank code (librosa's formula). */
const hzToMel = (hz: number) => (hz < 1000 ? (3 * hz) / 200 : 15 + (27 * Math.log(hz / 1000)) / Math.log(6.4));
const melToHz = (mel: number) => (mel < 15 ? (200 * mel) / 3 : 1000 * Math.exp(((mel - 15) * Math.log(6.4)) / 27));
/** Centre frequency of mel filter `m` of `nMels` spanning 0–8000 Hz. */
const centreHz = (m: number, nMels: number) => melToHz(((m + 1) * hzToMel(8000)) / (nMels + 1));

describe('referenceLogMel', () => {
  it('yields 3000 frames per mel bin whatever the input length', () => {
    for (const n of [0, 1000, 500000]) expect(referenceLogMel(new Float32Array(n), 80).length).toBe(80 * 3000);
    expect(referenceLogMel(new Float32Array(1000), 128).length).toBe(128 * 3000);
  });

  it('maps silence to the floor (log10(1e-10) + 4) / 4 = −1.5 everywhere', () => {
    expect(range(referenceLogMel(new Float32Array(16000), 80))).toEqual({ min: -1.5, max: -1.5 });
  });

  it('clamps the dynamic range to 8 decades below the loudest value (2 in feature units)', () => {
    // A loud tone followed by zero padding: the padding would be −1.5 without the clamp.
    const { min, max } = range(referenceLogMel(tone(2, 1000), 80));
    expect(max).toBeGreaterThan(0.5);
    expect(min).toBeCloseTo(max - 2, 6);
  });

  it('puts a pure tone in the mel bin whose centre is nearest its frequency', () => {
    const cases: Array<[WhisperMels, number[]]> = [
      [80, [20, 40, 55, 70]],
      [128, [40, 70, 100, 120]],
    ];
    for (const [nMels, bins] of cases) {
      // One 0.5 s tone per bin, back to back (50 frames each); look at a frame in the middle of each.
      const features = referenceLogMel(concat(...bins.map((m) => tone(0.5, centreHz(m, nMels)))), nMels);
      bins.forEach((m, i) => expect(loudestBin(features, nMels, 50 * i + 25), `${nMels} mels, tone at the centre of bin ${m}`).toBe(m));
    }
    // 1000 Hz = FFT bin 25 exactly; nearest 80-mel centre is bin 26 (≈1005 Hz).
    expect(loudestBin(referenceLogMel(tone(0.5, 1000), 80), 80, 25)).toBe(26);
  });

  it('agrees with transformers.js WhisperFeatureExtractor (an independent implementation) to 1e-5', async () => {
    const hf = new HfWhisperFeatureExtractor({
      feature_size: 80,
      sampling_rate: RATE,
      hop_length: 160,
      chunk_length: 30,
      n_fft: 400,
      n_samples: 480000,
      nb_max_frames: 3000,
      padding_value: 0,
    });
    const audio = concat(harmonics(2), noise(1, 7, 0.05));
    const theirs = (await hf._call(audio)).input_features.data as Float32Array;
    expect(maxAbsDiff(referenceLogMel(audio, 80), theirs)).toBeLessThan(1e-5);
  });
});

describe('WhisperFeatureExtractor (fast) against the reference', () => {
  const extractors = new Map<WhisperMels, WhisperFeatureExtractor>();
  beforeAll(async () => {
    for (const nMels of [80, 128] as const) extractors.set(nMels, await WhisperFeatureExtractor.create({ nMels, intraOpThreads: 1, interOpThreads: 1 }));
  });
  afterAll(async () => {
    for (const extractor of extractors.values()) await extractor.close();
  });

  const signals: Array<[string, () => Float32Array]> = [
    ['silence', () => new Float32Array(5 * RATE)],
    ['a 440 Hz tone', () => tone(6, 440)],
    ['speech-like harmonics', () => harmonics(8)],
    ['white noise', () => noise(10, 1, 0.3)],
    // float32 cancellation is worst for values just above the max − 8 floor: a loud tone, then faint noise.
    ['a loud tone then faint noise', () => concat(tone(2, 1234, 0.9), noise(6, 4, 1e-4))],
    ['a 1.3 s clip (mostly padding)', () => concat(harmonics(1), noise(0.3, 3, 0.1))],
    ['a 35 s clip (truncated to 30 s)', () => concat(harmonics(20), noise(10, 5, 0.2), tone(5, 3000))],
  ];

  for (const [name, make] of signals) {
    it(`matches on ${name} within ${TOLERANCE} for 80 and 128 mels`, async () => {
      const audio = make();
      // One float64 spectrogram serves both mel counts: the slow part of the reference.
      const power = referencePowerSpectrogram(audio);
      for (const nMels of [80, 128] as const) {
        const fast = await extractors.get(nMels)!.compute(audio);
        expect(fast.length).toBe(nMels * WHISPER_FRAMES);
        expect(maxAbsDiff(fast, referenceMelFromPower(power, nMels)), `${nMels} mels`).toBeLessThan(TOLERANCE);
      }
    });
  }

  it('ignores audio past 30 s and zero-pads short audio', async () => {
    const extractor = extractors.get(80)!;
    const long = concat(noise(30, 9, 0.2), tone(4, 2000));
    expect(maxAbsDiff(await extractor.compute(long), await extractor.compute(long.subarray(0, 480000)))).toBe(0);
    const short = harmonics(1);
    expect(maxAbsDiff(await extractor.compute(short), await extractor.compute(concat(short, new Float32Array(RATE))))).toBe(0);
  });

  it('gives each of several overlapping compute() calls its own result', async () => {
    const extractor = extractors.get(80)!;
    const inputs = [tone(1, 300), noise(1, 2, 0.3), harmonics(1)];
    const together = await Promise.all(inputs.map((x) => extractor.compute(x)));
    for (let i = 0; i < inputs.length; i++) expect(maxAbsDiff(together[i]!, await extractor.compute(inputs[i]!))).toBe(0);
  });
});
