/**
 * NeMo log-mel features against a straightforward reference written here (direct DFT, librosa's Slaney
 * filterbank definition, NeMo's normalize_batch). Tolerance: the features are float32, the reference is
 * float64; log-mels and normalised values agree within 1e-5 absolute (measured worst: 3e-6).
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_NEMO_FEATURES,
  RealFft,
  nemoFrameCount,
  nemoLogMel,
  slaneyMelFilterbank,
  type NemoFeatureConfig,
} from '../../../../src/engines/asr/nemo-features.js';

const TOLERANCE = 1e-5;

/** 0.25 s of two tones plus deterministic pseudo-noise. */
function testSignal(length = 4000): Float32Array {
  let seed = 12345;
  const noise = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 - 0.5) * 0.02;
  return Float32Array.from({ length }, (_, i) => 0.3 * Math.sin((2 * Math.PI * 440 * i) / 16000) + 0.1 * Math.sin((2 * Math.PI * 2500 * i) / 16000) + noise());
}

const melOf = (hz: number) => (hz < 1000 ? (3 * hz) / 200 : 15 + (27 * Math.log(hz / 1000)) / Math.log(6.4));
const hzOf = (mel: number) => (mel < 15 ? (200 * mel) / 3 : 1000 * Math.exp(((mel - 15) * Math.log(6.4)) / 27));

/** The reference: every step spelled out in float64, one frame and one bin at a time. */
function reference(x: Float32Array, c: NemoFeatureConfig): { rows: number[][]; frames: number } {
  const y = Array.from(x, (v, i) => (i === 0 ? v : v - c.preemph * x[i - 1]!));
  const half = c.nFft / 2;
  const at = (i: number) => {
    if (i >= 0 && i < y.length) return y[i]!;
    if (c.padMode === 'constant') return 0;
    return i < 0 ? y[-i]! : y[2 * (y.length - 1) - i]!;
  };
  const frames = Math.floor(x.length / c.hopLength) + 1;
  const left = (c.nFft - c.winLength) / 2;
  const window = (n: number) => (n < left || n >= left + c.winLength ? 0 : 0.5 - 0.5 * Math.cos((2 * Math.PI * (n - left)) / (c.winLength - 1)));
  const melEdges = Array.from({ length: c.nMels + 2 }, (_, i) => hzOf(melOf(c.lowFreq) + (i * (melOf(c.highFreq) - melOf(c.lowFreq))) / (c.nMels + 1)));
  const rows = Array.from({ length: c.nMels }, () => new Array<number>(frames).fill(0));
  for (let t = 0; t < frames; t++) {
    const power: number[] = [];
    for (let k = 0; k <= half; k++) {
      let re = 0;
      let im = 0;
      for (let n = 0; n < c.nFft; n++) {
        const v = at(t * c.hopLength - half + n) * window(n);
        re += v * Math.cos((2 * Math.PI * k * n) / c.nFft);
        im -= v * Math.sin((2 * Math.PI * k * n) / c.nFft);
      }
      power.push(re * re + im * im);
    }
    for (let m = 0; m < c.nMels; m++) {
      let sum = 0;
      for (let k = 0; k <= half; k++) {
        const f = (k * c.sampleRate) / c.nFft;
        const lower = (f - melEdges[m]!) / (melEdges[m + 1]! - melEdges[m]!);
        const upper = (melEdges[m + 2]! - f) / (melEdges[m + 2]! - melEdges[m + 1]!);
        sum += Math.max(0, Math.min(lower, upper)) * (2 / (melEdges[m + 2]! - melEdges[m]!)) * power[k]!;
      }
      rows[m]![t] = Math.log(sum + c.logGuard);
    }
  }
  return { rows, frames };
}

function expectClose(actual: Float32Array, rows: number[][], frames: number, stride = frames): void {
  let worst = 0;
  rows.forEach((row, m) => row.forEach((v, t) => (worst = Math.max(worst, Math.abs(actual[m * stride + t]! - v)))));
  expect(worst).toBeLessThan(TOLERANCE);
}

const NA: NemoFeatureConfig = { ...DEFAULT_NEMO_FEATURES, normalize: 'NA' };
/** The reference is slow (a direct DFT): computed once for the default signal and settings. */
let cached: ReturnType<typeof reference> | null = null;
const defaultReference = () => (cached ??= reference(testSignal(), NA));

describe('nemoLogMel', () => {
  it('matches the reference log-mel (pre-emphasis, centred zero-padded STFT, Slaney mels, ln(x + 2^-24))', () => {
    const x = testSignal();
    const got = nemoLogMel(x, NA);
    const ref = defaultReference();
    expect(got.frames).toBe(26);
    expect(got.validFrames).toBe(26);
    expectClose(got.data, ref.rows, ref.frames);
  });

  it('matches the reference with reflect padding, 80 mels and no pre-emphasis', () => {
    const config: NemoFeatureConfig = { ...NA, padMode: 'reflect', nMels: 80, preemph: 0 };
    const x = testSignal(3000);
    const ref = reference(x, config);
    expectClose(nemoLogMel(x, config).data, ref.rows, ref.frames);
  });

  it('counts frames as NeMo get_seq_len does with centre padding', () => {
    expect(nemoFrameCount(16000, DEFAULT_NEMO_FEATURES)).toBe(101);
    expect(nemoFrameCount(159, DEFAULT_NEMO_FEATURES)).toBe(1);
    expect(nemoLogMel(new Float32Array(16000), NA).frames).toBe(101);
  });

  it('normalises per feature over the valid frames with the unbiased std plus 1e-5', () => {
    const x = testSignal();
    const got = nemoLogMel(x, { ...DEFAULT_NEMO_FEATURES, normalize: 'per_feature' });
    const { rows, frames } = defaultReference();
    const expected = rows.map((row) => {
      const mean = row.reduce((a, b) => a + b, 0) / frames;
      const std = Math.sqrt(row.reduce((a, v) => a + (v - mean) ** 2, 0) / (frames - 1)) + 1e-5;
      return row.map((v) => (v - mean) / std);
    });
    expectClose(got.data, expected, frames);
  });

  it('normalises all features together with one mean and std', () => {
    const x = testSignal();
    const got = nemoLogMel(x, { ...DEFAULT_NEMO_FEATURES, normalize: 'all_features' });
    const { rows, frames } = defaultReference();
    const all = rows.flat();
    const mean = all.reduce((a, b) => a + b, 0) / all.length;
    const std = Math.sqrt(all.reduce((a, v) => a + (v - mean) ** 2, 0) / (all.length - 1)) + 1e-5;
    expectClose(
      got.data,
      rows.map((row) => row.map((v) => (v - mean) / std)),
      frames,
    );
  });

  it('pads the frame count to a multiple of pad_to with zeros that do not enter the statistics', () => {
    const x = testSignal();
    const plain = nemoLogMel(x, { ...DEFAULT_NEMO_FEATURES, normalize: 'per_feature' });
    const padded = nemoLogMel(x, { ...DEFAULT_NEMO_FEATURES, normalize: 'per_feature', padTo: 16 });
    expect(padded.frames).toBe(32);
    expect(padded.validFrames).toBe(26);
    for (let m = 0; m < 64; m++) {
      for (let t = 0; t < 32; t++) expect(padded.data[m * 32 + t]).toBe(t < 26 ? plain.data[m * 26 + t] : 0);
    }
  });

  it('refuses normalisation statistics over a single frame, as NeMo does', () => {
    expect(() => nemoLogMel(new Float32Array(100), DEFAULT_NEMO_FEATURES)).toThrow(/at least 2 frames/);
    expect(nemoLogMel(new Float32Array(100), NA).frames).toBe(1);
  });

  it('rejects a window longer than n_fft', () => {
    expect(() => nemoLogMel(testSignal(), { ...NA, winLength: 600 })).toThrow(/longer than n_fft/);
  });
});

describe('slaneyMelFilterbank', () => {
  it('spaces filters on the Slaney scale (linear 66.7 Hz per mel below 1 kHz), not HTK', () => {
    const bank = slaneyMelFilterbank(16000, 512, 64, 0, 8000);
    // Slaney: mel(8000) = 15 + 27·ln(8)/ln(6.4) ≈ 45.245, so edges step 45.245/65 mel ≈ 46.4 Hz at the bottom.
    const peakHz = (row: Float32Array) => row.indexOf(Math.max(...row)) * (16000 / 512);
    expect(Math.abs(peakHz(bank[3]!) - 4 * 46.4)).toBeLessThanOrEqual(16000 / 512);
  });

  it('gives each triangle unit area in Hz (Slaney normalisation)', () => {
    const bank = slaneyMelFilterbank(16000, 512, 64, 0, 8000);
    for (const m of [30, 45, 60]) {
      const area = bank[m]!.reduce((a, b) => a + b, 0) * (16000 / 512);
      expect(area).toBeGreaterThan(0.97);
      expect(area).toBeLessThan(1.03);
    }
  });
});

describe('RealFft', () => {
  it('gives the power spectrum of a direct DFT for every power-of-two size', () => {
    for (const n of [4, 8, 64, 512]) {
      const frame = Float64Array.from({ length: n }, (_, i) => Math.sin(i * 1.7) + 0.3 * Math.cos(i * i * 0.01));
      const out = new Float64Array(n / 2 + 1);
      new RealFft(n).power(frame, out);
      for (let k = 0; k <= n / 2; k++) {
        let re = 0;
        let im = 0;
        for (let i = 0; i < n; i++) {
          re += frame[i]! * Math.cos((2 * Math.PI * k * i) / n);
          im -= frame[i]! * Math.sin((2 * Math.PI * k * i) / n);
        }
        expect(Math.abs(out[k]! - (re * re + im * im))).toBeLessThan(1e-9 * (1 + re * re + im * im));
      }
    }
  });

  it('rejects sizes that are not powers of two', () => {
    expect(() => new RealFft(400)).toThrow(/power of two/);
  });
});
