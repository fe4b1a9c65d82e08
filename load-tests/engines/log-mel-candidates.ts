/**
 * The log-mel implementations that lost to the folded-DFT ONNX graph Kuma ships
 * (src/engines/asr/whisper-features.ts), kept so the benchmark (log-mel.ts) re-measures the choice on
 * whatever machine it runs on:
 * - an optimised JS FFT: n_fft 400 as a 200-point complex FFT of the even/odd samples (mixed radix
 *   5·5·2·4, specialised butterflies) plus the real-FFT split step, float64;
 * - onnxruntime's own STFT op (opset 17);
 * - the unfolded DFT as a Conv1D: 402 windowed cos/sin kernels of 400 taps, stride 160, framing in-graph.
 * All produce the same [nMels × 3000] layout as the reference.
 */
import { GraphBuilder } from '../../src/engines/onnx/graph-builder.js';
import { ort } from '../../src/engines/onnx/session.js';
import {
  centredWindow,
  finishLogMel,
  periodicHann,
  whisperMelFilters,
  WHISPER_BINS,
  WHISPER_FRAMES,
  WHISPER_HOP,
  WHISPER_N_FFT,
  WHISPER_WINDOW_SAMPLES,
  type WhisperMels,
} from '../../src/engines/asr/whisper-features.js';

/** Mixed-radix decimation-in-time complex FFT, in place on `re`/`im` after loading them in `perm` order. */
class ComplexFft {
  readonly re: Float64Array;
  readonly im: Float64Array;
  readonly perm: Uint32Array;
  private readonly stages: Array<{ p: number; L: number; wr: Float64Array; wi: Float64Array }> = [];

  constructor(
    readonly n: number,
    factors: number[],
  ) {
    // Input order: the last stage combines p decimated sub-sequences laid out one after another, recursively.
    const order = (list: number[], f: number[]): number[] => {
      if (!f.length) return list;
      const p = f[f.length - 1]!;
      return Array.from({ length: p }, (_, q) =>
        order(
          list.filter((_, i) => i % p === q),
          f.slice(0, -1),
        ),
      ).flat();
    };
    this.perm = Uint32Array.from(
      order(
        Array.from({ length: n }, (_, i) => i),
        factors,
      ),
    );
    let L = 1;
    for (const p of factors) {
      const wr = new Float64Array(L * p);
      const wi = new Float64Array(L * p);
      for (let j = 0; j < L; j++)
        for (let q = 0; q < p; q++) [wr[j * p + q], wi[j * p + q]] = [Math.cos((-2 * Math.PI * j * q) / (L * p)), Math.sin((-2 * Math.PI * j * q) / (L * p))];
      this.stages.push({ p, L, wr, wi });
      L *= p;
    }
    this.re = new Float64Array(n);
    this.im = new Float64Array(n);
  }

  run(): void {
    // One specialised loop per radix: a radix test inside the butterfly loop costs V8 about half the speed.
    for (const { p, L, wr, wi } of this.stages) {
      if (p === 2) this.radix2(L, wr, wi);
      else if (p === 4) this.radix4(L, wr, wi);
      else this.radix5(L, wr, wi);
    }
  }

  private radix2(L: number, wr: Float64Array, wi: Float64Array): void {
    const { re, im, n } = this;
    for (let b = 0; b < n; b += 2 * L) {
      for (let j = 0; j < L; j++) {
        const i0 = b + j,
          i1 = i0 + L,
          w = 2 * j + 1;
        const tr = re[i1]! * wr[w]! - im[i1]! * wi[w]!,
          ti = re[i1]! * wi[w]! + im[i1]! * wr[w]!;
        re[i1] = re[i0]! - tr;
        im[i1] = im[i0]! - ti;
        re[i0] = re[i0]! + tr;
        im[i0] = im[i0]! + ti;
      }
    }
  }

  private radix4(L: number, wr: Float64Array, wi: Float64Array): void {
    const { re, im, n } = this;
    for (let b = 0; b < n; b += 4 * L) {
      for (let j = 0; j < L; j++) {
        const i0 = b + j,
          i1 = i0 + L,
          i2 = i1 + L,
          i3 = i2 + L,
          w = 4 * j;
        const a0r = re[i0]!,
          a0i = im[i0]!;
        const a1r = re[i1]! * wr[w + 1]! - im[i1]! * wi[w + 1]!,
          a1i = re[i1]! * wi[w + 1]! + im[i1]! * wr[w + 1]!;
        const a2r = re[i2]! * wr[w + 2]! - im[i2]! * wi[w + 2]!,
          a2i = re[i2]! * wi[w + 2]! + im[i2]! * wr[w + 2]!;
        const a3r = re[i3]! * wr[w + 3]! - im[i3]! * wi[w + 3]!,
          a3i = re[i3]! * wi[w + 3]! + im[i3]! * wr[w + 3]!;
        const s02r = a0r + a2r,
          s02i = a0i + a2i,
          d02r = a0r - a2r,
          d02i = a0i - a2i;
        const s13r = a1r + a3r,
          s13i = a1i + a3i,
          d13r = a1r - a3r,
          d13i = a1i - a3i;
        // W4 = −i: outputs 1 and 3 are d02 ∓ i·d13.
        re[i0] = s02r + s13r;
        im[i0] = s02i + s13i;
        re[i2] = s02r - s13r;
        im[i2] = s02i - s13i;
        re[i1] = d02r + d13i;
        im[i1] = d02i - d13r;
        re[i3] = d02r - d13i;
        im[i3] = d02i + d13r;
      }
    }
  }

  private radix5(L: number, wr: Float64Array, wi: Float64Array): void {
    const { re, im, n } = this;
    const c1 = Math.cos((2 * Math.PI) / 5),
      c2 = Math.cos((4 * Math.PI) / 5),
      s1 = Math.sin((2 * Math.PI) / 5),
      s2 = Math.sin((4 * Math.PI) / 5);
    for (let b = 0; b < n; b += 5 * L) {
      for (let j = 0; j < L; j++) {
        const i0 = b + j,
          i1 = i0 + L,
          i2 = i1 + L,
          i3 = i2 + L,
          i4 = i3 + L,
          w = 5 * j;
        const a0r = re[i0]!,
          a0i = im[i0]!;
        const a1r = re[i1]! * wr[w + 1]! - im[i1]! * wi[w + 1]!,
          a1i = re[i1]! * wi[w + 1]! + im[i1]! * wr[w + 1]!;
        const a2r = re[i2]! * wr[w + 2]! - im[i2]! * wi[w + 2]!,
          a2i = re[i2]! * wi[w + 2]! + im[i2]! * wr[w + 2]!;
        const a3r = re[i3]! * wr[w + 3]! - im[i3]! * wi[w + 3]!,
          a3i = re[i3]! * wi[w + 3]! + im[i3]! * wr[w + 3]!;
        const a4r = re[i4]! * wr[w + 4]! - im[i4]! * wi[w + 4]!,
          a4i = re[i4]! * wi[w + 4]! + im[i4]! * wr[w + 4]!;
        const s14r = a1r + a4r,
          s14i = a1i + a4i,
          d14r = a1r - a4r,
          d14i = a1i - a4i;
        const s23r = a2r + a3r,
          s23i = a2i + a3i,
          d23r = a2r - a3r,
          d23i = a2i - a3i;
        re[i0] = a0r + s14r + s23r;
        im[i0] = a0i + s14i + s23i;
        const t1r = a0r + c1 * s14r + c2 * s23r,
          t1i = a0i + c1 * s14i + c2 * s23i;
        const t2r = a0r + c2 * s14r + c1 * s23r,
          t2i = a0i + c2 * s14i + c1 * s23i;
        const u1r = s1 * d14r + s2 * d23r,
          u1i = s1 * d14i + s2 * d23i,
          u2r = s2 * d14r - s1 * d23r,
          u2i = s2 * d14i - s1 * d23i;
        re[i1] = t1r + u1i;
        im[i1] = t1i - u1r;
        re[i4] = t1r - u1i;
        im[i4] = t1i + u1r;
        re[i2] = t2r + u2i;
        im[i2] = t2i - u2r;
        re[i3] = t2r - u2i;
        im[i3] = t2i + u2r;
      }
    }
  }
}

/** The optimised JS candidate. */
export function jsFftLogMel(samples16k: Float32Array, nMels: WhisperMels): Float32Array {
  const padded = centredWindow(samples16k);
  const window = periodicHann(WHISPER_N_FFT);
  const half = WHISPER_N_FFT / 2;
  const fft = new ComplexFft(half, [5, 5, 2, 4]);
  const { re, im, perm } = fft;
  const cos = Float64Array.from({ length: half }, (_, k) => Math.cos((2 * Math.PI * k) / WHISPER_N_FFT));
  const sin = Float64Array.from({ length: half }, (_, k) => Math.sin((2 * Math.PI * k) / WHISPER_N_FFT));
  // Each mel triangle touches a handful of bins: keep only its non-zero span.
  const spans = whisperMelFilters(nMels).map((row) => {
    const first = Math.max(
      0,
      row.findIndex((v) => v > 0),
    );
    let last = row.length - 1;
    while (last > first && row[last] === 0) last--;
    return { first, weights: Float64Array.from(row.subarray(first, last + 1)) };
  });
  const power = new Float64Array(WHISPER_BINS);
  const mel = new Float32Array(nMels * WHISPER_FRAMES);
  for (let t = 0; t < WHISPER_FRAMES; t++) {
    const start = t * WHISPER_HOP;
    for (let i = 0; i < half; i++) {
      const s = 2 * perm[i]!;
      re[i] = padded[start + s]! * window[s]!;
      im[i] = padded[start + s + 1]! * window[s + 1]!;
    }
    fft.run();
    // Split the packed transform: X_k = E_k + e^{-2πik/N} O_k.
    power[0] = (re[0]! + im[0]!) ** 2;
    power[half] = (re[0]! - im[0]!) ** 2;
    for (let k = 1; k < half; k++) {
      const zr = re[k]!,
        zi = im[k]!,
        cr = re[half - k]!,
        ci = -im[half - k]!;
      const er = 0.5 * (zr + cr),
        ei = 0.5 * (zi + ci),
        or = 0.5 * (zi - ci),
        oi = -0.5 * (zr - cr);
      const xr = er + cos[k]! * or + sin[k]! * oi,
        xi = ei + cos[k]! * oi - sin[k]! * or;
      power[k] = xr * xr + xi * xi;
    }
    for (let m = 0; m < nMels; m++) {
      const { first, weights } = spans[m]!;
      let sum = 0;
      for (let k = 0; k < weights.length; k++) sum += weights[k]! * power[first + k]!;
      mel[m * WHISPER_FRAMES + t] = sum;
    }
  }
  return finishLogMel(mel);
}

/** Mel filterbank, log10/clamp/scale on `power` [3000, 201]; output [nMels, 3000]. */
function melTail(g: GraphBuilder, power: string, nMels: WhisperMels): void {
  const filters = whisperMelFilters(nMels);
  const ft = new Float32Array(WHISPER_BINS * nMels);
  for (let m = 0; m < nMels; m++) for (let k = 0; k < WHISPER_BINS; k++) ft[k * nMels + m] = filters[m]![k]!;
  const mel = g.op('MatMul', [power, g.floats(ft, [WHISPER_BINS, nMels])]);
  const logMel = g.op('Add', [g.op('Mul', [g.op('Log', [g.op('Max', [mel, g.floats([1e-10], [])])]), g.floats([1 / (4 * Math.LN10)], [])]), g.floats([1], [])]);
  const floor = g.op('Sub', [g.op('ReduceMax', [logMel], { keepdims: { i: 0 } }), g.floats([2], [])]);
  g.op('Transpose', [g.op('Max', [logMel, floor])], { perm: { ints: [1, 0] } }, 'features');
  g.output('features', 'float', [nMels, WHISPER_FRAMES]);
}

/** Reflect-padded window cut to exactly 3000 frames' worth of samples, [1, 1, 480240]. */
function paddedAudio(g: GraphBuilder): string {
  const audio = g.input('audio', 'float', [WHISPER_WINDOW_SAMPLES]);
  const pad = WHISPER_N_FFT / 2;
  const padded = g.op('Pad', [g.op('Reshape', [audio, g.int64s([1, 1, WHISPER_WINDOW_SAMPLES])]), g.int64s([0, 0, pad, 0, 0, pad])], {
    mode: { s: 'reflect' },
  });
  const length = (WHISPER_FRAMES - 1) * WHISPER_HOP + WHISPER_N_FFT;
  return g.op('Slice', [padded, g.int64s([0]), g.int64s([length]), g.int64s([2])]);
}

export function stftOpGraph(nMels: WhisperMels): Uint8Array {
  const g = new GraphBuilder('stft_op');
  const signal = g.op('Reshape', [paddedAudio(g), g.int64s([1, -1, 1])]);
  const window = g.floats(Float32Array.from(periodicHann(WHISPER_N_FFT)));
  const spec = g.op('STFT', [signal, g.int64s([WHISPER_HOP], []), window, g.int64s([WHISPER_N_FFT], [])], { onesided: { i: 1 } }); // [1, 3000, 201, 2]
  const power = g.op('ReduceSum', [g.op('Mul', [spec, spec]), g.int64s([3])], { keepdims: { i: 0 } });
  melTail(g, g.op('Reshape', [power, g.int64s([WHISPER_FRAMES, WHISPER_BINS])]), nMels);
  return g.toBytes({ opset: 17 });
}

export function convDftGraph(nMels: WhisperMels): Uint8Array {
  const g = new GraphBuilder('conv_dft');
  const hann = periodicHann(WHISPER_N_FFT);
  const kernels = new Float32Array(2 * WHISPER_BINS * WHISPER_N_FFT);
  for (let k = 0; k < WHISPER_BINS; k++) {
    for (let n = 0; n < WHISPER_N_FFT; n++) {
      const phase = (2 * Math.PI * ((k * n) % WHISPER_N_FFT)) / WHISPER_N_FFT;
      kernels[k * WHISPER_N_FFT + n] = hann[n]! * Math.cos(phase);
      kernels[(WHISPER_BINS + k) * WHISPER_N_FFT + n] = hann[n]! * Math.sin(phase);
    }
  }
  const spec = g.op('Conv', [paddedAudio(g), g.floats(kernels, [2 * WHISPER_BINS, 1, WHISPER_N_FFT])], {
    strides: { ints: [WHISPER_HOP] },
    kernel_shape: { ints: [WHISPER_N_FFT] },
  });
  const frames = g.op('Transpose', [g.op('Reshape', [g.op('Mul', [spec, spec]), g.int64s([2, WHISPER_BINS, WHISPER_FRAMES])])], { perm: { ints: [0, 2, 1] } });
  melTail(g, g.op('ReduceSum', [frames, g.int64s([0])], { keepdims: { i: 0 } }), nMels);
  return g.toBytes({ opset: 17 });
}

/** Runs one of the candidate graphs (input `audio` [480000], zero-padded or truncated here). */
export async function graphCandidate(bytes: Uint8Array): Promise<{ compute(samples: Float32Array): Promise<Float32Array>; close(): Promise<void> }> {
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  return {
    async compute(samples) {
      const audio = new Float32Array(WHISPER_WINDOW_SAMPLES);
      audio.set(samples.subarray(0, WHISPER_WINDOW_SAMPLES));
      const out = await session.run({ audio: new ort.Tensor('float32', audio, [WHISPER_WINDOW_SAMPLES]) });
      return out.features!.data as Float32Array;
    },
    close: () => session.release(),
  };
}
