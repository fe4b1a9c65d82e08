/**
 * Deterministic test signals and the measures the codec tests compare them with.
 *
 * Signals are "speech-like" rather than pure tones because lossy speech codecs (Opus, AAC, MP3) are
 * tuned for such content and a sine can pass where speech would not: a gliding pitch with decaying
 * harmonics under a syllable-rate envelope, plus short noise bursts standing in for fricatives. A seeded
 * PRNG makes every run identical, so a failure reproduces.
 */

/** Mulberry32: tiny, fast, good enough for test noise; the same seed gives the same sequence. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SpeechOptions {
  seed?: number;
  /** Peak level, 0–1; default 0.5 (-6 dBFS) so that codecs and resamplers never clip. */
  level?: number;
  /** Base pitch in Hz; default 140 (pitch glides ±35 % around it). */
  pitch?: number;
}

/**
 * A voiced signal: harmonics of a pitch that glides (two incommensurate sinusoidal modulations), with
 * a spectral tilt and a 4 Hz syllable envelope, and a noise burst every ~300 ms. Harmonics stop below
 * min(4 kHz, 0.45 · rate) so the content fits every rate used (8 kHz and up) without aliasing.
 */
export function speechLike(rate: number, seconds: number, options: SpeechOptions = {}): Float32Array {
  const { seed = 1, level = 0.5, pitch = 140 } = options;
  const n = Math.round(rate * seconds);
  const out = new Float32Array(n);
  const random = prng(seed);
  const topHz = Math.min(4000, 0.45 * rate);
  const phaseOffsets = Array.from({ length: 40 }, () => random() * 2 * Math.PI);
  let phase = 0;
  for (let i = 0; i < n; i++) {
    const t = i / rate;
    const f0 = pitch * (1 + 0.25 * Math.sin(2 * Math.PI * 1.3 * t) + 0.1 * Math.sin(2 * Math.PI * 3.7 * t + 1));
    phase += (2 * Math.PI * f0) / rate;
    let v = 0;
    for (let h = 1; h <= 40 && h * f0 < topHz; h++) v += Math.sin(h * phase + phaseOffsets[h - 1]!) / h;
    const envelope = 0.55 + 0.45 * Math.sin(2 * Math.PI * 4 * t);
    out[i] = 0.3 * v * envelope;
  }
  // Noise bursts: 40 ms every 300 ms, smoothed a little so that their spectrum also fits low rates.
  const burst = Math.round(0.04 * rate);
  for (let start = Math.round(0.1 * rate); start + burst < n; start += Math.round(0.3 * rate)) {
    let prev = 0;
    for (let i = 0; i < burst; i++) {
      const white = random() * 2 - 1;
      prev = 0.5 * prev + 0.5 * white;
      out[start + i]! += 0.25 * prev * Math.sin((Math.PI * i) / burst);
    }
  }
  return normalize(out, level);
}

/** Left and right differ (other pitch and seed) so that a downmix is a real mean, not a copy. */
export function stereoSpeechLike(rate: number, seconds: number, seed = 1): [Float32Array, Float32Array] {
  return [speechLike(rate, seconds, { seed, pitch: 140 }), speechLike(rate, seconds, { seed: seed + 100, pitch: 210 })];
}

export function sine(rate: number, n: number, hz: number, amplitude = 0.5): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = amplitude * Math.sin((2 * Math.PI * hz * i) / rate);
  return out;
}

export function normalize(x: Float32Array, peak: number): Float32Array {
  let max = 0;
  for (const v of x) max = Math.max(max, Math.abs(v));
  if (max > 0) for (let i = 0; i < x.length; i++) x[i] = (x[i]! * peak) / max;
  return x;
}

/** Mean of the channels, as the decoder downmixes. */
export function mixdown(channels: Float32Array[]): Float32Array {
  const n = channels[0]!.length;
  const out = new Float32Array(n);
  for (const ch of channels) for (let i = 0; i < n; i++) out[i]! += ch[i]! / channels.length;
  return out;
}

/** Largest |a[i] − b[i]| over the common length. */
export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/**
 * Lag (in samples) at which `test` best matches `ref`: test[i + lag] ≈ ref[i]. Searched over ±maxLag
 * with normalised cross-correlation on a window in the middle of the signals.
 */
export function bestLag(ref: Float32Array, test: Float32Array, maxLag: number): number {
  let best = 0;
  let bestScore = -Infinity;
  // A window of at most 8192 samples in the middle keeps this O(window × lags), fast enough for ±80 ms at 48 kHz.
  const length = Math.min(ref.length, test.length);
  const from = Math.max(maxLag, (length >> 1) - 4096);
  const to = Math.min(length - maxLag, (length >> 1) + 4096);
  for (let lag = -maxLag; lag <= maxLag; lag++) {
    let dot = 0;
    let energy = 0;
    for (let i = from; i < to; i++) {
      const t = test[i + lag] ?? 0;
      dot += ref[i]! * t;
      energy += t * t;
    }
    const score = energy > 0 ? dot / Math.sqrt(energy) : -Infinity;
    if (score > bestScore) {
      bestScore = score;
      best = lag;
    }
  }
  return best;
}

export interface Comparison {
  lag: number;
  /** Signal-to-noise ratio of test against ref after alignment, dB (noise = difference). */
  snrDb: number;
  /** Pearson correlation after alignment. */
  correlation: number;
}

/**
 * Aligns `test` to `ref` by cross-correlation (lossy codecs add priming delay) and measures how close
 * it is over the overlap, ignoring `edge` samples at each end where codecs fade in and out.
 */
export function compareAligned(ref: Float32Array, test: Float32Array, maxLag: number, edge: number): Comparison {
  const lag = bestLag(ref, test, maxLag);
  let signal = 0;
  let noise = 0;
  let sr = 0,
    st = 0,
    srr = 0,
    stt = 0,
    srt = 0,
    count = 0;
  for (let i = edge; i < ref.length - edge; i++) {
    const t = test[i + lag];
    if (t === undefined) continue;
    const r = ref[i]!;
    signal += r * r;
    noise += (r - t) ** 2;
    sr += r;
    st += t;
    srr += r * r;
    stt += t * t;
    srt += r * t;
    count++;
  }
  const cov = srt / count - (sr / count) * (st / count);
  const correlation = cov / Math.sqrt((srr / count - (sr / count) ** 2) * (stt / count - (st / count) ** 2));
  return { lag, snrDb: 10 * Math.log10(signal / Math.max(noise, 1e-30)), correlation };
}

/** Mean power of `x` in dB relative to 1.0 (a full-scale sine is −3 dB), ignoring `skip` samples at each end. */
export function rmsDb(x: Float32Array, skip = 0): number {
  let e = 0;
  for (let i = skip; i < x.length - skip; i++) e += x[i]! ** 2;
  return 10 * Math.log10(e / Math.max(1, x.length - 2 * skip) + 1e-30);
}
