/**
 * Whisper's log-mel front end (MODELS.md "Whisper specifics"): one 30 s window of 16 kHz audio becomes
 * `input_features` [nMels, 3000]. `referenceLogMel` is the plain, obviously-correct version the tests
 * compare against; `WhisperFeatureExtractor` is the fast one the Whisper runner uses.
 */
import { GraphBuilder } from '../onnx/graph-builder.js';
import { ort, providerOptions } from '../onnx/session.js';
import { slaneyMelFilterbank } from './nemo-features.js';

export const WHISPER_SAMPLE_RATE = 16000;
export const WHISPER_N_FFT = 400;
export const WHISPER_HOP = 160;
/** 30 s at 16 kHz: every window is padded or truncated to this. */
export const WHISPER_WINDOW_SAMPLES = 480000;
export const WHISPER_FRAMES = 3000;
export const WHISPER_BINS = WHISPER_N_FFT / 2 + 1;

export type WhisperMels = 80 | 128;

/** Slaney mel filterbank 0–8000 Hz for n_fft 400 (librosa / transformers `mel_filter_bank`), [nMels][201]. */
export function whisperMelFilters(nMels: WhisperMels): Float32Array[] {
  return slaneyMelFilterbank(WHISPER_SAMPLE_RATE, WHISPER_N_FFT, nMels, 0, WHISPER_SAMPLE_RATE / 2);
}

/** Periodic Hann (torch.hann_window(400), periodic=True): the window Whisper uses. */
export function periodicHann(n: number): Float64Array {
  const w = new Float64Array(n);
  for (let i = 0; i < n; i++) w[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n);
  return w;
}

/** Pads with zeros or truncates to 480000 samples, then reflect-pads 200 on each side (torch.stft center). */
export function centredWindow(samples16k: Float32Array): Float64Array {
  const pad = WHISPER_N_FFT / 2;
  const n = WHISPER_WINDOW_SAMPLES;
  const out = new Float64Array(n + 2 * pad);
  const take = Math.min(samples16k.length, n);
  for (let i = 0; i < take; i++) out[pad + i] = samples16k[i]!;
  // Reflect excludes the edge sample: out[pad - i] mirrors x[i], out[pad + n - 1 + i] mirrors x[n - 1 - i].
  for (let i = 1; i <= pad; i++) {
    out[pad - i] = out[pad + i]!;
    out[pad + n - 1 + i] = out[pad + n - 1 - i]!;
  }
  return out;
}

/** log10 clamp, dynamic-range clamp to max − 8, then (x + 4) / 4: in place on mel power values. */
export function finishLogMel(mel: Float32Array): Float32Array {
  let max = -Infinity;
  for (let i = 0; i < mel.length; i++) {
    const v = Math.log10(Math.max(mel[i]!, 1e-10));
    mel[i] = v;
    if (v > max) max = v;
  }
  const floor = max - 8;
  for (let i = 0; i < mel.length; i++) mel[i] = (Math.max(mel[i]!, floor) + 4) / 4;
  return mel;
}

/**
 * The straightforward reference, part 1: power spectrum |X_k|² of every frame by a direct DFT in float64,
 * [3000 × 201] row-major. Slow (seconds per window) by design — clarity over speed.
 */
export function referencePowerSpectrogram(samples16k: Float32Array): Float64Array {
  const padded = centredWindow(samples16k);
  const window = periodicHann(WHISPER_N_FFT);
  // DFT basis tables: cos/sin(2πkn/N) for k = 0..200, n = 0..399.
  const cos = new Float64Array(WHISPER_BINS * WHISPER_N_FFT);
  const sin = new Float64Array(WHISPER_BINS * WHISPER_N_FFT);
  for (let k = 0; k < WHISPER_BINS; k++) {
    for (let n = 0; n < WHISPER_N_FFT; n++) {
      const phase = (2 * Math.PI * ((k * n) % WHISPER_N_FFT)) / WHISPER_N_FFT;
      cos[k * WHISPER_N_FFT + n] = Math.cos(phase);
      sin[k * WHISPER_N_FFT + n] = Math.sin(phase);
    }
  }
  const frame = new Float64Array(WHISPER_N_FFT);
  const power = new Float64Array(WHISPER_FRAMES * WHISPER_BINS);
  // torch.stft yields 3001 frames; Whisper drops the last one.
  for (let t = 0; t < WHISPER_FRAMES; t++) {
    let silent = true;
    for (let n = 0; n < WHISPER_N_FFT; n++) {
      frame[n] = padded[t * WHISPER_HOP + n]! * window[n]!;
      if (frame[n] !== 0) silent = false;
    }
    // An all-zero frame has an all-zero spectrum: skipping it only saves time (zero padding is common).
    if (silent) continue;
    for (let k = 0; k < WHISPER_BINS; k++) {
      let re = 0;
      let im = 0;
      const row = k * WHISPER_N_FFT;
      for (let n = 0; n < WHISPER_N_FFT; n++) {
        re += frame[n]! * cos[row + n]!;
        im -= frame[n]! * sin[row + n]!;
      }
      power[t * WHISPER_BINS + k] = re * re + im * im;
    }
  }
  return power;
}

/** The reference, part 2: mel filterbank on the power spectrogram, then the log/clamp/scale steps. */
export function referenceMelFromPower(power: Float64Array, nMels: WhisperMels): Float32Array {
  const filters = whisperMelFilters(nMels);
  const mel = new Float32Array(nMels * WHISPER_FRAMES);
  for (let t = 0; t < WHISPER_FRAMES; t++) {
    for (let m = 0; m < nMels; m++) {
      const filter = filters[m]!;
      let sum = 0;
      for (let k = 0; k < WHISPER_BINS; k++) sum += filter[k]! * power[t * WHISPER_BINS + k]!;
      mel[m * WHISPER_FRAMES + t] = sum;
    }
  }
  return finishLogMel(mel);
}

/**
 * The straightforward reference exactly as MODELS.md describes it: row-major [nMels × 3000]. The tests
 * hold the fast extractor to it.
 */
export function referenceLogMel(samples16k: Float32Array, nMels: WhisperMels): Float32Array {
  return referenceMelFromPower(referencePowerSpectrogram(samples16k), nMels);
}

/*
 * The fast path. Benchmarked against an optimised JS mixed-radix FFT (load-tests/engines/log-mel.ts), a
 * DFT written as a matrix product in onnxruntime's native (SIMD) GEMM wins. Halving its work: the periodic
 * Hann window is symmetric (w[n] = w[400 − n], w[0] = 0), so with e[n] = f[n] + f[400 − n] and
 * o[n] = f[n] − f[400 − n] (n = 1..199) the real part is Σ w·e·cos over 200 taps (e[200] = f[200]) and the
 * imaginary part Σ w·o·sin over 199 taps — two [3000 × 200] · [200 × 201]-sized products instead of one
 * [3000 × 400] · [400 × 402]. JS does that folding while framing (one pass over the audio); the graph does
 * the products, the power, the mel filterbank and the log/clamp/scale.
 */
const FOLD = WHISPER_N_FFT / 2; // 200 even taps (n = 1..200), 199 odd taps (n = 1..199)

/** ONNX graph: `even` [3000,200], `odd` [3000,199] → `features` [nMels,3000]. */
export function buildLogMelGraph(nMels: WhisperMels): Uint8Array {
  const g = new GraphBuilder(`whisper_log_mel_${nMels}`);
  const even = g.input('even', 'float', [WHISPER_FRAMES, FOLD]);
  const odd = g.input('odd', 'float', [WHISPER_FRAMES, FOLD - 1]);
  const hann = periodicHann(WHISPER_N_FFT);
  const basis = (fn: (x: number) => number, taps: number, k0: number, bins: number): string => {
    const w = new Float32Array(taps * bins);
    for (let j = 0; j < taps; j++) {
      const n = j + 1;
      for (let b = 0; b < bins; b++) w[j * bins + b] = hann[n]! * fn((2 * Math.PI * (((b + k0) * n) % WHISPER_N_FFT)) / WHISPER_N_FFT);
    }
    return g.floats(w, [taps, bins]);
  };
  // Real parts for bins 0..200; imaginary parts for bins 1..199 (sin vanishes at bins 0 and 200).
  const re = g.op('MatMul', [even, basis(Math.cos, FOLD, 0, WHISPER_BINS)]);
  const im = g.op('MatMul', [odd, basis(Math.sin, FOLD - 1, 1, FOLD - 1)]);
  const filters = whisperMelFilters(nMels);
  const filterRows = (k0: number, bins: number): string => {
    const f = new Float32Array(bins * nMels);
    for (let m = 0; m < nMels; m++) for (let b = 0; b < bins; b++) f[b * nMels + m] = filters[m]![b + k0]!;
    return g.floats(f, [bins, nMels]);
  };
  // mel = F·(re² + im²), split as F_re·re² + F_im·im² so the two squares never need aligning.
  const mel = g.op('Add', [
    g.op('MatMul', [g.op('Mul', [re, re]), filterRows(0, WHISPER_BINS)]),
    g.op('MatMul', [g.op('Mul', [im, im]), filterRows(1, FOLD - 1)]),
  ]);
  // (log10(x) + 4) / 4 = ln(x)/(4 ln 10) + 1; the max − 8 clamp becomes max − 2 on that scale.
  const logMel = g.op('Add', [g.op('Mul', [g.op('Log', [g.op('Max', [mel, g.floats([1e-10], [])])]), g.floats([1 / (4 * Math.LN10)], [])]), g.floats([1], [])]);
  const floor = g.op('Sub', [g.op('ReduceMax', [logMel], { keepdims: { i: 0 } }), g.floats([2], [])]);
  g.op('Transpose', [g.op('Max', [logMel, floor])], { perm: { ints: [1, 0] } }, 'features');
  g.output('features', 'float', [nMels, WHISPER_FRAMES]);
  return g.toBytes({ opset: 17 });
}

/** Reusable buffers for foldFrames (about 6.7 MB: worth keeping between windows). */
export interface FoldBuffers {
  padded: Float32Array;
  even: Float32Array;
  odd: Float32Array;
}

export function foldBuffers(): FoldBuffers {
  return {
    padded: new Float32Array(WHISPER_WINDOW_SAMPLES + WHISPER_N_FFT),
    even: new Float32Array(WHISPER_FRAMES * FOLD),
    odd: new Float32Array(WHISPER_FRAMES * (FOLD - 1)),
  };
}

/** Pads/truncates, reflect-pads and frames the window, folding each frame into its even/odd halves. */
export function foldFrames(samples16k: Float32Array, buffers: FoldBuffers = foldBuffers()): FoldBuffers {
  const { padded, even, odd } = buffers;
  // Literal sizes in the hot loop: module constants are context loads V8 does not always hoist.
  const pad = 200;
  const n = 480000;
  const take = Math.min(samples16k.length, n);
  padded.set(take < samples16k.length ? samples16k.subarray(0, take) : samples16k, pad);
  padded.fill(0, pad + take, pad + n);
  for (let i = 1; i <= pad; i++) {
    padded[pad - i] = padded[pad + i]!;
    padded[pad + n - 1 + i] = padded[pad + n - 1 - i]!;
  }
  for (let t = 0; t < 3000; t++) {
    const start = t * 160;
    const e = t * 200;
    const o = t * 199;
    for (let j = 0; j < 199; j++) {
      const a = padded[start + 1 + j]!;
      const b = padded[start + 399 - j]!;
      even[e + j] = a + b;
      odd[o + j] = a - b;
    }
    even[e + 199] = padded[start + 200]!;
  }
  return buffers;
}

export interface WhisperFeatureOptions {
  nMels: WhisperMels;
  intraOpThreads: number;
  interOpThreads: number;
}

/**
 * The fast extractor the Whisper runner uses (inside a model worker thread, so blocking is fine).
 * compute() returns row-major [nMels, 3000] float32, the encoder's `input_features` without the batch
 * axis; audio beyond 30 s is ignored, shorter audio is zero-padded.
 */
export class WhisperFeatureExtractor {
  private readonly buffers = foldBuffers();
  /** compute() calls run one at a time: they share the framing buffers, which the session reads. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly nMels: WhisperMels,
    private readonly session: ort.InferenceSession,
  ) {}

  static async create(options: WhisperFeatureOptions): Promise<WhisperFeatureExtractor> {
    const session = await ort.InferenceSession.create(buildLogMelGraph(options.nMels), {
      intraOpNumThreads: options.intraOpThreads,
      interOpNumThreads: options.interOpThreads,
      graphOptimizationLevel: 'all',
      ...providerOptions(),
    });
    return new WhisperFeatureExtractor(options.nMels, session);
  }

  compute(samples16k: Float32Array): Promise<Float32Array> {
    const run = this.queue.then(async () => {
      const { even, odd } = foldFrames(samples16k, this.buffers);
      const result = await this.session.run({
        even: new ort.Tensor('float32', even, [WHISPER_FRAMES, FOLD]),
        odd: new ort.Tensor('float32', odd, [WHISPER_FRAMES, FOLD - 1]),
      });
      return result.features!.data as Float32Array;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    await this.queue;
    await this.session.release();
  }
}
