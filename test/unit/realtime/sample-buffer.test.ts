import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SampleBuffer } from '../../../src/realtime/sample-buffer.js';

const MIN_CAPACITY = 16_000;

describe('SampleBuffer', () => {
  it('holds nothing until audio arrives (an idle session costs no buffer)', () => {
    const buffer = new SampleBuffer();
    expect(buffer.capacitySamples).toBe(0);
    buffer.append(new Float32Array(320));
    expect(buffer.capacitySamples).toBe(MIN_CAPACITY);
  });

  it('gives back most of a long turn once it is dropped', () => {
    const buffer = new SampleBuffer();
    for (let i = 0; i < 3000; i++) buffer.append(new Float32Array(320)); // 60 s in 20 ms frames
    expect(buffer.capacitySamples).toBeGreaterThanOrEqual(960_000);
    buffer.dropBefore(buffer.end - 320); // committed but the last frame
    expect(buffer.capacitySamples).toBe(MIN_CAPACITY);
    expect(buffer.heldSamples).toBe(320);
  });

  it('keeps every sample in order through any appends and drops, and after a drop holds at most 4 × max(1 s, 2 × what is left)', () => {
    const step = fc.oneof(fc.record({ append: fc.integer({ min: 1, max: 20_000 }) }), fc.record({ drop: fc.double({ min: 0, max: 1, noNaN: true }) }));
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const buffer = new SampleBuffer();
        const model: number[] = []; // sample values still held, from the model's `start`
        let start = 0;
        let next = 0;
        for (const s of steps) {
          if ('append' in s) {
            const samples = Float32Array.from({ length: s.append }, () => next++ % 65_536);
            buffer.append(samples);
            model.push(...samples);
          } else {
            const n = Math.floor(s.drop * model.length);
            buffer.dropBefore(start + n);
            model.splice(0, n);
            start += n;
          }
          expect(buffer.start).toBe(start);
          expect(buffer.end).toBe(start + model.length);
          const held = buffer.copy(start, start + model.length);
          expect(held.length === model.length && held.every((v, i) => v === model[i])).toBe(true);
          if ('drop' in s) expect(buffer.capacitySamples).toBeLessThanOrEqual(4 * Math.max(MIN_CAPACITY, 2 * model.length));
        }
      }),
      { numRuns: 100 },
    );
  });
});
