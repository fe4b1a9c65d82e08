/**
 * NeMo's log-mel front end (`AudioToMelSpectrogramPreprocessor` / `FilterbankFeatures`), computed in JS
 * because NeMo's ONNX exports start at the features: pre-emphasis, a centred STFT (symmetric Hann window
 * of `winLength` zero-padded to `nFft`), power spectrum, a Slaney mel filterbank with Slaney area
 * normalisation, `ln(x + guard)`, then per_feature / all_features / no normalisation over the valid frames.
 * The FFT is a radix-2 real FFT (one half-size complex FFT plus a split step), so 30 s of audio costs a
 * few tens of milliseconds.
 */

export type NemoNormalize = 'per_feature' | 'all_features' | 'NA';

export interface NemoFeatureConfig {
  sampleRate: number;
  nMels: number;
  nFft: number;
  winLength: number;
  hopLength: number;
  /** 0 disables pre-emphasis (NeMo's `preemph: null`). */
  preemph: number;
  window: 'hann' | 'hamming' | 'none';
  /** Added before the log (NeMo `log_zero_guard_value`, 2^-24). */
  logGuard: number;
  log: boolean;
  normalize: NemoNormalize;
  /** Pad the frame count up to a multiple of this with zeros (QuartzNet: 16; 0 = none). */
  padTo: number;
  /** torch.stft centre padding: NeMo ≥ 1.23 pads with zeros ('constant'), older releases reflect. */
  padMode: 'constant' | 'reflect';
  lowFreq: number;
  highFreq: number;
}

export const DEFAULT_NEMO_FEATURES: NemoFeatureConfig = {
  sampleRate: 16000,
  nMels: 64,
  nFft: 512,
  winLength: 400,
  hopLength: 160,
  preemph: 0.97,
  window: 'hann',
  logGuard: 2 ** -24,
  log: true,
  normalize: 'per_feature',
  padTo: 0,
  padMode: 'constant',
  lowFreq: 0,
  highFreq: 8000,
};

/** Keeps NeMo's std from being zero (its `CONSTANT`). */
const STD_GUARD = 1e-5;

export interface NemoFeatures {
  /** Row-major [nMels, frames]: the `audio_signal` layout without the batch axis. */
  data: Float32Array;
  frames: number;
  /** Frames that carry audio (NeMo's `seq_len`, fed as `length`); the rest is padding. */
  validFrames: number;
}

function hzToMelSlaney(hz: number): number {
  const minLogHz = 1000;
  const step = 200 / 3;
  if (hz < minLogHz) return hz / step;
  return minLogHz / step + Math.log(hz / minLogHz) / (Math.log(6.4) / 27);
}

function melToHzSlaney(mel: number): number {
  const minLogHz = 1000;
  const step = 200 / 3;
  const minLogMel = minLogHz / step;
  if (mel < minLogMel) return mel * step;
  return minLogHz * Math.exp((Math.log(6.4) / 27) * (mel - minLogMel));
}

/** librosa.filters.mel(htk=False, norm='slaney'): [nMels][nFft/2+1] triangles with area normalisation. */
export function slaneyMelFilterbank(sampleRate: number, nFft: number, nMels: number, lowFreq: number, highFreq: number): Float32Array[] {
  const bins = nFft / 2 + 1;
  const lo = hzToMelSlaney(lowFreq);
  const hi = hzToMelSlaney(highFreq);
  const edges = Array.from({ length: nMels + 2 }, (_, i) => melToHzSlaney(lo + ((hi - lo) * i) / (nMels + 1)));
  const filters: Float32Array[] = [];
  for (let m = 0; m < nMels; m++) {
    const [left, centre, right] = [edges[m]!, edges[m + 1]!, edges[m + 2]!];
    const row = new Float32Array(bins);
    const norm = 2 / (right - left);
    for (let k = 0; k < bins; k++) {
      const f = (k * sampleRate) / nFft;
      const weight = Math.max(0, Math.min((f - left) / (centre - left), (right - f) / (right - centre)));
      row[k] = weight * norm;
    }
    filters.push(row);
  }
  return filters;
}

/** torch.hann_window(n, periodic=False) and friends: NeMo builds symmetric windows. */
function symmetricWindow(kind: NemoFeatureConfig['window'], n: number): Float64Array {
  const w = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const phase = n > 1 ? (2 * Math.PI * i) / (n - 1) : 0;
    w[i] = kind === 'hann' ? 0.5 - 0.5 * Math.cos(phase) : kind === 'hamming' ? 0.54 - 0.46 * Math.cos(phase) : 1;
  }
  return w;
}

/**
 * Power spectrum |X_k|² (k = 0..n/2) of a real frame of power-of-two length n: the even/odd samples are
 * packed into one n/2-point complex FFT, then split into the real transform.
 */
export class RealFft {
  private readonly half: number;
  private readonly cos: Float64Array;
  private readonly sin: Float64Array;
  private readonly bitrev: Uint32Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;

  constructor(readonly size: number) {
    if (size < 4 || (size & (size - 1)) !== 0) throw new RangeError(`FFT size must be a power of two ≥ 4, got ${size}`);
    this.half = size / 2;
    this.cos = new Float64Array(this.half);
    this.sin = new Float64Array(this.half);
    for (let k = 0; k < this.half; k++) {
      this.cos[k] = Math.cos((2 * Math.PI * k) / size);
      this.sin[k] = Math.sin((2 * Math.PI * k) / size);
    }
    const bits = Math.log2(this.half);
    this.bitrev = new Uint32Array(this.half);
    for (let i = 0; i < this.half; i++) {
      let r = 0;
      for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
      this.bitrev[i] = r;
    }
    this.re = new Float64Array(this.half);
    this.im = new Float64Array(this.half);
  }

  /** Writes size/2+1 power values into `out`. */
  power(frame: Float64Array, out: Float64Array): void {
    const { half, re, im, cos, sin } = this;
    for (let i = 0; i < half; i++) {
      const j = this.bitrev[i]!;
      re[j] = frame[2 * i]!;
      im[j] = frame[2 * i + 1]!;
    }
    // Iterative radix-2 butterflies; twiddles of the half-size FFT are every other full-size twiddle.
    for (let len = 2; len <= half; len <<= 1) {
      const stride = (2 * half) / len;
      const step = len >> 1;
      for (let start = 0; start < half; start += len) {
        for (let k = 0; k < step; k++) {
          const wr = cos[k * stride]!;
          const wi = -sin[k * stride]!;
          const a = start + k;
          const b = a + step;
          const tr = re[b]! * wr - im[b]! * wi;
          const ti = re[b]! * wi + im[b]! * wr;
          re[b] = re[a]! - tr;
          im[b] = im[a]! - ti;
          re[a] = re[a]! + tr;
          im[a] = im[a]! + ti;
        }
      }
    }
    // Split: X_k = E_k + e^{-2πik/n} O_k with E, O recovered from Z_k and conj(Z_{half-k}).
    out[0] = (re[0]! + im[0]!) ** 2;
    out[half] = (re[0]! - im[0]!) ** 2;
    for (let k = 1; k < half; k++) {
      const zr = re[k]!;
      const zi = im[k]!;
      const cr = re[half - k]!;
      const ci = -im[half - k]!;
      const er = 0.5 * (zr + cr);
      const ei = 0.5 * (zi + ci);
      const or = 0.5 * (zi - ci);
      const oi = -0.5 * (zr - cr);
      const wr = cos[k]!;
      const wi = -sin[k]!;
      const xr = er + wr * or - wi * oi;
      const xi = ei + wr * oi + wi * or;
      out[k] = xr * xr + xi * xi;
    }
  }
}

/** Frames NeMo produces for `samples` (its `get_seq_len` with centre padding). */
export function nemoFrameCount(samples: number, config: Pick<NemoFeatureConfig, 'hopLength'>): number {
  return Math.floor(samples / config.hopLength) + 1;
}

/**
 * One STFT frame to log-mels: the window, FFT and filterbank of a config, built once. Shared by the whole-
 * audio front end below and the streaming one (nemo-features-stream.ts), so both give the same floats.
 */
export class MelFrames {
  private readonly window: Float64Array;
  private readonly spans: { first: number; last: number; row: Float32Array }[];
  private readonly fft: RealFft;
  private readonly buffer: Float64Array;
  private readonly power: Float64Array;

  constructor(private readonly config: NemoFeatureConfig) {
    const { nFft, winLength, nMels } = config;
    if (winLength > nFft) throw new RangeError(`window ${winLength} is longer than n_fft ${nFft}`);
    // torch.stft centres a shorter window inside the n_fft frame.
    this.window = new Float64Array(nFft);
    this.window.set(symmetricWindow(config.window, winLength), Math.floor((nFft - winLength) / 2));
    const filters = slaneyMelFilterbank(config.sampleRate, nFft, nMels, config.lowFreq, config.highFreq);
    // Each triangle touches a few bins: keep only its non-zero span.
    this.spans = filters.map((row) => {
      let first = row.findIndex((v) => v > 0);
      if (first < 0) first = 0;
      let last = row.length - 1;
      while (last > first && row[last] === 0) last--;
      return { first, last, row };
    });
    this.fft = new RealFft(nFft);
    this.buffer = new Float64Array(nFft);
    this.power = new Float64Array(nFft / 2 + 1);
  }

  /** The mels of the n_fft samples of `padded` from `offset`, into `data[m * stride + t]`. */
  frame(padded: Float64Array, offset: number, data: Float32Array, stride: number, t: number): void {
    const { nFft, nMels, log, logGuard } = this.config;
    const { buffer, window, power } = this;
    for (let i = 0; i < nFft; i++) buffer[i] = padded[offset + i]! * window[i]!;
    this.fft.power(buffer, power);
    for (let m = 0; m < nMels; m++) {
      const { first, last, row } = this.spans[m]!;
      let sum = 0;
      for (let k = first; k <= last; k++) sum += row[k]! * power[k]!;
      data[m * stride + t] = log ? Math.log(sum + logGuard) : sum;
    }
  }
}

export function nemoLogMel(samples: Float32Array, config: NemoFeatureConfig = DEFAULT_NEMO_FEATURES): NemoFeatures {
  const { nFft, hopLength, nMels } = config;
  const n = samples.length;
  const validFrames = nemoFrameCount(n, config);
  const frames = config.padTo > 0 ? Math.ceil(validFrames / config.padTo) * config.padTo : validFrames;
  // Pre-emphasis, then centre padding by nFft/2 on both sides.
  const pad = nFft / 2;
  const padded = new Float64Array(n + 2 * pad);
  for (let i = 0; i < n; i++) padded[pad + i] = i === 0 || config.preemph === 0 ? samples[i]! : samples[i]! - config.preemph * samples[i - 1]!;
  if (config.padMode === 'reflect' && n > pad) {
    for (let i = 1; i <= pad; i++) {
      padded[pad - i] = padded[pad + i]!;
      padded[pad + n - 1 + i] = padded[pad + n - 1 - i]!;
    }
  }
  const analyzer = new MelFrames(config);
  const data = new Float32Array(nMels * frames);
  for (let t = 0; t < validFrames; t++) analyzer.frame(padded, t * hopLength, data, frames, t);
  normalizeFeatures(data, nMels, frames, validFrames, config.normalize);
  return { data, frames, validFrames };
}

/** NeMo's `normalize_batch` on one utterance, in place: statistics over valid frames, unbiased std + 1e-5. */
export function normalizeFeatures(data: Float32Array, nMels: number, frames: number, validFrames: number, mode: NemoNormalize): void {
  if (mode === 'NA') return;
  if (validFrames < 2) throw new RangeError(`${mode} normalisation needs at least 2 frames (got ${validFrames}): the audio is too short`);
  if (mode === 'per_feature') {
    for (let m = 0; m < nMels; m++) {
      const row = m * frames;
      let mean = 0;
      for (let t = 0; t < validFrames; t++) mean += data[row + t]!;
      mean /= validFrames;
      let ss = 0;
      for (let t = 0; t < validFrames; t++) ss += (data[row + t]! - mean) ** 2;
      const std = Math.sqrt(ss / (validFrames - 1)) + STD_GUARD;
      for (let t = 0; t < validFrames; t++) data[row + t] = (data[row + t]! - mean) / std;
    }
    return;
  }
  let mean = 0;
  for (let m = 0; m < nMels; m++) for (let t = 0; t < validFrames; t++) mean += data[m * frames + t]!;
  const count = nMels * validFrames;
  mean /= count;
  let ss = 0;
  for (let m = 0; m < nMels; m++) for (let t = 0; t < validFrames; t++) ss += (data[m * frames + t]! - mean) ** 2;
  const std = Math.sqrt(ss / (count - 1)) + STD_GUARD;
  for (let m = 0; m < nMels; m++) for (let t = 0; t < validFrames; t++) data[m * frames + t] = (data[m * frames + t]! - mean) / std;
}
