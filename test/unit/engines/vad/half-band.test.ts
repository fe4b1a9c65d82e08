/**
 * The VAD's 16 → 8 kHz half-band decimator: its response (flat to 3.4 kHz, ≥ 59 dB down from 4.6 kHz, what
 * Silero's 8 kHz mode needs), tones through it, and that cutting the input into pieces with the history
 * carried gives the same samples as one call (the worker decimates each job's windows separately).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HALF_BAND_HISTORY, decimateHalfBand, halfBandTaps } from '../../../../src/engines/vad/half-band.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 100);

/** Gain in dB of the taps at frequency f (Hz) for 16 kHz input. */
function gainDb(taps: Float64Array, f: number): number {
  let re = 0;
  let im = 0;
  for (let n = 0; n < taps.length; n++) {
    re += taps[n]! * Math.cos((2 * Math.PI * f * n) / 16000);
    im -= taps[n]! * Math.sin((2 * Math.PI * f * n) / 16000);
  }
  return 20 * Math.log10(Math.hypot(re, im));
}

function decimate(input: Float32Array): Float32Array {
  const out = new Float32Array(input.length / 2);
  decimateHalfBand(input, new Float32Array(HALF_BAND_HISTORY), out);
  return out;
}

function tone(f: number, samples: number): Float32Array {
  return Float32Array.from({ length: samples }, (_, i) => 0.5 * Math.sin((2 * Math.PI * f * i) / 16000));
}

function rms(x: Float32Array): number {
  return Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);
}

describe('decimateHalfBand', () => {
  it('is flat within 0.01 dB up to 3.4 kHz and at least 59 dB down from 4.6 kHz to 8 kHz', () => {
    const taps = halfBandTaps();
    for (let f = 0; f <= 3400; f += 50) expect(Math.abs(gainDb(taps, f))).toBeLessThan(0.01);
    for (let f = 4600; f <= 8000; f += 25) expect(gainDb(taps, f)).toBeLessThan(-59);
    // Half-band: every other tap but the centre is zero.
    const centre = (taps.length - 1) / 2;
    taps.forEach((t, n) => (n !== centre && (n - centre) % 2 === 0 ? expect(t).toBe(0) : expect(t).not.toBe(0)));
  });

  it('keeps a 1 kHz tone at its level and removes a 6 kHz tone (it would alias to 2 kHz)', () => {
    const kept = decimate(tone(1000, 16000)).subarray(100);
    const removed = decimate(tone(6000, 16000)).subarray(100);
    expect(20 * Math.log10(rms(kept) / (0.5 / Math.SQRT2))).toBeCloseTo(0, 2);
    expect(20 * Math.log10(rms(removed) / (0.5 / Math.SQRT2))).toBeLessThan(-59);
  });

  it('pieces with the history carried give the same samples as one call over the whole', () => {
    fc.assert(
      fc.property(
        fc.array(fc.float({ min: -1, max: 1, noNaN: true }), { minLength: 0, maxLength: 600 }),
        fc.array(fc.nat(300), { maxLength: 6 }),
        (values, cuts) => {
          const input = Float32Array.from(values.length % 2 ? values.slice(1) : values);
          const whole = decimate(input);
          const history = new Float32Array(HALF_BAND_HISTORY);
          const pieces = new Float32Array(input.length / 2);
          let at = 0;
          for (const cut of [...cuts.map((c) => 2 * c), input.length].sort((a, b) => a - b)) {
            const end = Math.min(input.length, Math.max(at, cut));
            decimateHalfBand(input.subarray(at, end), history, pieces, at / 2);
            at = end;
          }
          expect(pieces).toEqual(whole);
        },
      ),
      { numRuns: RUNS, seed: 20261124 },
    );
  });

  it('refuses an odd input length and a history of the wrong size', () => {
    expect(() => decimateHalfBand(new Float32Array(3), new Float32Array(HALF_BAND_HISTORY), new Float32Array(2))).toThrow(RangeError);
    expect(() => decimateHalfBand(new Float32Array(4), new Float32Array(3), new Float32Array(2))).toThrow(RangeError);
  });
});
