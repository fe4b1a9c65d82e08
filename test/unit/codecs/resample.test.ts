/**
 * The streaming resampler: length rule, time alignment, chunking independence, quality (SINAD of a sine,
 * passband flatness) and band-limiting, over every pair of the six rates Kuma uses.
 *
 * Measured at quality 5 (see src/codecs/resample.ts): SINAD 108–171 dB, passband within ±0.001 dB up to
 * 0.8 × the lower Nyquist, ≥ 108 dB attenuation at 1.1 × the new Nyquist. The floors asserted here sit
 * well under those figures so that only a real regression trips them.
 */
import { describe, expect, it } from 'vitest';
import { createResampler, resample, resamplerHeapBytes } from '../../../src/codecs/resample.js';
import { rmsDb, sine, speechLike } from './helpers/signals.js';

const RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;
const PAIRS = RATES.flatMap((a) => RATES.filter((b) => b !== a).map((b) => [a, b] as const));

/** Amplitude and residual of a least-squares fit of a sine of known frequency, over x[skip..len-skip). */
function fitSine(x: Float32Array, hz: number, rate: number, skip: number): { amplitude: number; phase: number; sinadDb: number } {
  let ss = 0,
    cc = 0,
    sc = 0,
    xs = 0,
    xc = 0;
  for (let i = skip; i < x.length - skip; i++) {
    const s = Math.sin((2 * Math.PI * hz * i) / rate);
    const c = Math.cos((2 * Math.PI * hz * i) / rate);
    ss += s * s;
    cc += c * c;
    sc += s * c;
    xs += x[i]! * s;
    xc += x[i]! * c;
  }
  const det = ss * cc - sc * sc;
  const a = (xs * cc - xc * sc) / det;
  const b = (xc * ss - xs * sc) / det;
  let signal = 0;
  let residual = 0;
  for (let i = skip; i < x.length - skip; i++) {
    const fit = a * Math.sin((2 * Math.PI * hz * i) / rate) + b * Math.cos((2 * Math.PI * hz * i) / rate);
    signal += fit * fit;
    residual += (x[i]! - fit) ** 2;
  }
  return { amplitude: Math.hypot(a, b), phase: Math.atan2(b, a), sinadDb: 10 * Math.log10(signal / residual) };
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

describe('resample: length rule', () => {
  it.each(PAIRS)('%i → %i: total output is round(input · out / in) for awkward lengths', async (from, to) => {
    for (const n of [0, 1, 2, 3, 7, 160, 441, 1001, 4097, 12_345]) {
      const out = await resample(speechLike(from, n / from), from, to);
      expect(Math.abs(out.length - Math.round((n * to) / from))).toBeLessThanOrEqual(1);
    }
  });

  it('equal rates copy the input and never alias it', async () => {
    const input = speechLike(16000, 0.1);
    const out = await resample(input, 16000, 16000);
    expect(out).toEqual(input);
    expect(out.buffer).not.toBe(input.buffer);
  });
});

describe('resample: alignment', () => {
  it.each(PAIRS)('%i → %i: a click at input sample k comes out at ≈ k · out / in', async (from, to) => {
    const n = from; // one second
    const input = new Float32Array(n);
    const k = Math.round(n * 0.37);
    input[k] = 1;
    const out = await resample(input, from, to);
    let peak = 0;
    for (let i = 1; i < out.length; i++) if (Math.abs(out[i]!) > Math.abs(out[peak]!)) peak = i;
    expect(Math.abs(peak - (k * to) / from)).toBeLessThanOrEqual(1);
  });

  it.each(PAIRS)('%i → %i: a 1 kHz sine keeps its phase (no delay) and its amplitude', async (from, to) => {
    const out = await resample(sine(from, from, 1000), from, to);
    const fit = fitSine(out, 1000, to, 200);
    expect(Math.abs(fit.phase)).toBeLessThan(1e-3);
    expect(Math.abs(20 * Math.log10(fit.amplitude / 0.5))).toBeLessThan(0.001);
  });
});

describe('resample: streaming', () => {
  it.each(PAIRS)('%i → %i: 1-sample chunks, odd chunks and one whole buffer give identical output', async (from, to) => {
    const input = speechLike(from, 0.1, { seed: 7 });
    const whole = await resample(input, from, to);
    for (const chunk of [1, 37, 4096 + 3]) {
      const r = await createResampler(from, to);
      const parts: Float32Array[] = [];
      for (let at = 0; at < input.length; at += chunk) parts.push(r.process(input.subarray(at, at + chunk)));
      parts.push(r.flush());
      r.close();
      expect(concat(parts)).toEqual(whole);
    }
  });

  it('returns output while streaming, before flush, and tolerates empty chunks', async () => {
    const r = await createResampler(48000, 16000);
    expect(r.process(new Float32Array(0)).length).toBe(0);
    const first = r.process(speechLike(48000, 0.1));
    expect(first.length).toBeGreaterThan(1500); // 1600 due, minus the filter's look-ahead
    expect(first.length + r.flush().length).toBe(1600);
    expect(r.flush().length).toBe(0); // the stream has ended
    expect(() => r.process(new Float32Array(10))).toThrow(/flushed/);
    r.close();
    r.close(); // idempotent
    expect(() => r.process(new Float32Array(10))).toThrow(/closed/);
  });

  it('frees its WASM memory on close: a thousand closed resamplers do not grow the heap', async () => {
    const cycle = async (close: boolean) => {
      const r = await createResampler(44100, 16000, 10); // quality 10: the largest filter table
      r.process(new Float32Array(441));
      if (close) r.close();
    };
    for (let i = 0; i < 50; i++) await cycle(true); // let the heap settle at its working size
    const before = await resamplerHeapBytes();
    for (let i = 0; i < 1000; i++) await cycle(true);
    expect(await resamplerHeapBytes()).toBe(before);
    // The measure is sensitive: resamplers left open do grow the heap.
    for (let i = 0; i < 400; i++) await cycle(false); // ≈ 70 KB each: more than the 16 MB initial heap holds
    expect(await resamplerHeapBytes()).toBeGreaterThan(before);
  });

  it('refuses nonsense rates and qualities', async () => {
    await expect(createResampler(0, 16000)).rejects.toThrow(RangeError);
    await expect(createResampler(16000, 44100.5)).rejects.toThrow(RangeError);
    await expect(createResampler(16000, 8000, 11)).rejects.toThrow(RangeError);
  });
});

describe('resample: quality', () => {
  it.each(PAIRS)('%i → %i: a 1 kHz sine at −6 dBFS comes out with SINAD above 100 dB', async (from, to) => {
    const out = await resample(sine(from, from, 1000), from, to);
    expect(fitSine(out, 1000, to, 200).sinadDb).toBeGreaterThan(100);
  });

  it.each(PAIRS)('%i → %i: the passband is flat within ±0.01 dB up to 0.8 × the lower Nyquist', async (from, to) => {
    const nyquist = Math.min(from, to) / 2;
    for (const fraction of [0.05, 0.2, 0.4, 0.6, 0.8]) {
      const hz = fraction * nyquist;
      const out = await resample(sine(from, Math.round(from * 0.3), hz), from, to);
      expect(Math.abs(20 * Math.log10(fitSine(out, hz, to, 300).amplitude / 0.5))).toBeLessThan(0.01);
    }
  });

  it.each(PAIRS.filter(([from, to]) => to < from))('%i → %i: tones above the new Nyquist are removed (≥ 100 dB down), not aliased', async (from, to) => {
    for (const multiple of [1.1, 1.25, 1.5]) {
      const hz = (multiple * to) / 2;
      if (hz >= from / 2) continue;
      const out = await resample(sine(from, Math.round(from * 0.3), hz), from, to);
      // A 0.5-amplitude sine has mean power −9 dB; what is left must be 100 dB under that.
      expect(rmsDb(out, 300)).toBeLessThan(-9 - 100);
    }
  });
});

describe('resample: processTransient', () => {
  it('gives the same samples as process() for any chunking, each view copied before the next call', async () => {
    const input = speechLike(24000, 0.7);
    for (const [from, to] of [
      [24000, 16000],
      [8000, 16000],
      [16000, 16000],
    ] as const) {
      const signal = from === 24000 ? input : input.subarray(0, Math.floor((input.length * from) / 24000));
      for (const chunk of [1, 159, 480, 4097, 20000]) {
        const whole = await createResampler(from, to, 3);
        const transient = await createResampler(from, to, 3);
        const a: number[] = [];
        const b: number[] = [];
        for (let at = 0; at < signal.length; at += chunk) {
          const piece = signal.subarray(at, at + chunk);
          a.push(...whole.process(piece));
          b.push(...transient.processTransient(piece)); // spread = the copy a caller makes before its next call
        }
        expect(b).toEqual(a);
        whole.close();
        transient.close();
      }
    }
  });
});
