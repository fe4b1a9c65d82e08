/**
 * The one float → s16 quantizer every 16-bit encoder uses, against its definition (clamp to ±1, × 32767,
 * Math.round, NaN → 0) on random inputs — uniform, exact half steps, values around the clamp, specials —
 * and the little-endian bytes against an explicit per-byte packing.
 */
import { describe, expect, it } from 'vitest';
import { floatToInt16, int16ToLeBytes } from '../../../../src/codecs/encoders/pcm.js';
import { seededRandom as random } from '../../../helpers/seeded-random.js';

const reference = (x: number): number => (x >= 1 ? 32767 : x <= -1 ? -32767 : Number.isNaN(x) ? 0 : Math.round(x * 32767));

describe('floatToInt16', () => {
  it('equals clamp + Math.round on 1,000,000 random samples of every kind', () => {
    const next = random(2026);
    const samples = new Float32Array(1_000_000);
    for (let i = 0; i < samples.length; i++) {
      const kind = i % 4;
      if (kind === 0)
        samples[i] = next() * 2.4 - 1.2; // uniform, some beyond the clamp
      else if (kind === 1)
        samples[i] = (Math.floor(next() * 65535) - 32767 + 0.5) / 32767; // near half steps
      else if (kind === 2)
        samples[i] = (next() < 0.5 ? -1 : 1) * (1 - next() * 1e-4); // around ±1
      else samples[i] = (next() - 0.5) * 1e-3; // around 0, both signs
    }
    const out = floatToInt16(samples);
    for (let i = 0; i < samples.length; i++)
      if (out[i] !== reference(samples[i]!)) expect({ i, x: samples[i], got: out[i] }).toEqual({ i, x: samples[i], got: reference(samples[i]!) });
  });

  it('handles the special values', () => {
    const specials = [NaN, Infinity, -Infinity, 0, -0, 1, -1, 0.5 / 32767, -0.5 / 32767, 1.5 / 32767, -1.5 / 32767, 32766.5 / 32767, -32766.5 / 32767];
    // Through an Int16Array, as the encoders store them (-0 is 0 there).
    expect([...floatToInt16(Float32Array.from(specials))]).toEqual([...Int16Array.from(specials.map((x) => reference(Math.fround(x))))]);
  });
});

describe('int16ToLeBytes', () => {
  it('packs low byte first, with or without a target buffer', () => {
    const next = random(7);
    const samples = Int16Array.from({ length: 10_001 }, () => Math.floor(next() * 65536) - 32768);
    const expected = new Uint8Array(samples.length * 2);
    samples.forEach((v, i) => {
      expected[2 * i] = v & 0xff;
      expected[2 * i + 1] = (v >> 8) & 0xff;
    });
    expect(int16ToLeBytes(samples)).toEqual(expected);
    const target = new Uint8Array(samples.length * 2 + 3);
    int16ToLeBytes(samples, target, 3);
    expect(target.subarray(3)).toEqual(expected);
  });
});
