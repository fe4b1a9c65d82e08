/**
 * How the lossy encoder tests judge decoded audio against the input: the lag that aligns them (codec
 * priming), waveform correlation and SNR, and a band-energy distance for what perceptual codecs keep when
 * they do not keep the waveform.
 */

/** Best lag (test[i + lag] ≈ ref[i]) in [minLag, maxLag] by cross-correlation over the whole overlap. */
export function findLag(ref: Float32Array, test: Float32Array, minLag: number, maxLag: number): number {
  let best = -Infinity;
  let bestLag = minLag;
  for (let lag = minLag; lag <= maxLag; lag++) {
    let sum = 0;
    const from = Math.max(0, -lag);
    const to = Math.min(ref.length, test.length - lag);
    for (let i = from; i < to; i++) sum += ref[i]! * test[i + lag]!;
    if (sum > best) {
      best = sum;
      bestLag = lag;
    }
  }
  return bestLag;
}

/** Normalised correlation and SNR of `test` against `ref` at a given lag, over their overlap. */
export function compareAligned(ref: Float32Array, test: Float32Array, lag: number): { correlation: number; snrDb: number } {
  let cross = 0;
  let refEnergy = 0;
  let testEnergy = 0;
  let error = 0;
  for (let i = Math.max(0, -lag); i < Math.min(ref.length, test.length - lag); i++) {
    const a = ref[i]!;
    const b = test[i + lag]!;
    cross += a * b;
    refEnergy += a * a;
    testEnergy += b * b;
    error += (a - b) ** 2;
  }
  return { correlation: cross / Math.sqrt(refEnergy * testEnergy), snrDb: 10 * Math.log10(refEnergy / error) };
}

const BAND_EDGES_HZ = [100, 300, 600, 1000, 1500, 2200, 3000, 4000, 5500, 7500];

/**
 * Mean absolute difference in dB between the band energies of `ref` and `test` (aligned by `lag`), over
 * 512-sample Hann frames (hop 256) whose reference energy is within 40 dB of the loudest frame. Perceptual
 * codecs do not keep the waveform of noise (fricatives) but do keep its spectrum, so this is the measure
 * that tells "coded speech" from "broken output" for them.
 */
export function spectralDistanceDb(ref: Float32Array, test: Float32Array, lag: number, rate: number): number {
  const size = 512;
  const hop = 256;
  const bins = size / 2;
  const edges = BAND_EDGES_HZ.filter((hz) => hz < rate / 2 - 200).map((hz) => Math.round((hz * size) / rate));
  const window = Float64Array.from({ length: size }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / size));
  const bandsOf = (signal: Float32Array, start: number): number[] => {
    const re = Float64Array.from({ length: size }, (_, i) => (signal[start + i] ?? 0) * window[i]!);
    const im = new Float64Array(size);
    fft(re, im);
    const bands: number[] = [];
    for (let b = 0; b + 1 < edges.length; b++) {
      let sum = 1e-12;
      for (let bin = edges[b]!; bin < edges[b + 1]! && bin < bins; bin++) sum += re[bin]! ** 2 + im[bin]! ** 2;
      bands.push(10 * Math.log10(sum));
    }
    return bands;
  };
  const frames: { energy: number; diff: number }[] = [];
  for (let start = Math.max(0, -lag); start + size <= ref.length && start + lag + size <= test.length; start += hop) {
    const a = bandsOf(ref, start);
    const b = bandsOf(test, start + lag);
    const energy = 10 * Math.log10(a.reduce((sum, db) => sum + 10 ** (db / 10), 0));
    frames.push({ energy, diff: a.reduce((sum, db, i) => sum + Math.abs(db - b[i]!), 0) / a.length });
  }
  const loudest = Math.max(...frames.map((frame) => frame.energy));
  const counted = frames.filter((frame) => frame.energy > loudest - 40);
  return counted.reduce((sum, frame) => sum + frame.diff, 0) / counted.length;
}

/** In-place iterative radix-2 FFT (length a power of two). */
function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j]!, re[i]!];
      [im[i], im[j]] = [im[j]!, im[i]!];
    }
  }
  for (let length = 2; length <= n; length <<= 1) {
    const angle = (-2 * Math.PI) / length;
    for (let i = 0; i < n; i += length) {
      for (let k = 0; k < length / 2; k++) {
        const wr = Math.cos(angle * k);
        const wi = Math.sin(angle * k);
        const a = i + k;
        const b = a + length / 2;
        const tr = re[b]! * wr - im[b]! * wi;
        const ti = re[b]! * wi + im[b]! * wr;
        re[b] = re[a]! - tr;
        im[b] = im[a]! - ti;
        re[a] = re[a]! + tr;
        im[a] = im[a]! + ti;
      }
    }
  }
}
