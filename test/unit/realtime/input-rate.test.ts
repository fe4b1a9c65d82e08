/**
 * The realtime input rate bound (src/realtime/input-rate.ts): over any schedule of appends, the audio taken
 * never exceeds the burst plus the rate times the wall time elapsed; audio at or under the rate is never
 * refused; a refused append takes nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InputRateBound } from '../../../src/realtime/input-rate.js';

describe('InputRateBound', () => {
  it('audio taken ≤ burst + rate × elapsed, for any schedule of appends', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1, max: 20, noNaN: true }),
        fc.double({ min: 1, max: 120, noNaN: true }),
        fc.array(fc.tuple(fc.double({ min: 0, max: 500, noNaN: true }), fc.double({ min: 0, max: 10, noNaN: true })), { maxLength: 300 }),
        (maxRate, burstSeconds, schedule) => {
          let now = 0;
          const bound = new InputRateBound({ maxRate, burstSeconds }, () => now);
          let taken = 0;
          for (const [gapMs, seconds] of schedule) {
            now += gapMs;
            if (bound.take(seconds)) taken += seconds;
            expect(taken).toBeLessThanOrEqual(burstSeconds + (now / 1000) * maxRate + 1e-3); // take() forgives 1 µs of float noise per append
          }
        },
      ),
    );
  });

  it('a stream at the rate (or slower) is never refused, whatever the burst already used', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1, max: 20, noNaN: true }),
        fc.integer({ min: 1, max: 100 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (maxRate, frameMs, slowdown) => {
          let now = 0;
          const bound = new InputRateBound({ maxRate, burstSeconds: 1 }, () => now);
          expect(bound.take(1)).toBe(true); // the whole burst, at once
          // Then frames of `frameMs` of audio, each after frameMs / maxRate of wall time (or more).
          for (let i = 0; i < 500; i++) {
            now += (frameMs / maxRate) * (1 + slowdown);
            expect(bound.take(frameMs / 1000)).toBe(true);
          }
        },
      ),
    );
  });

  it('60× real time after the burst: about 4/60 of the audio is taken, and a refused append takes nothing', () => {
    let now = 0;
    const bound = new InputRateBound({ maxRate: 4, burstSeconds: 60 }, () => now);
    let taken = 0;
    // 30 minutes of 100 ms appends, one every 100/60 ms.
    for (let i = 0; i < 18_000; i++) {
      now = (i * 100) / 60;
      if (bound.take(0.1)) taken += 0.1;
    }
    const elapsed = now / 1000;
    expect(taken).toBeLessThanOrEqual(60 + 4 * elapsed + 1e-6);
    expect(taken).toBeGreaterThan(60 + 4 * elapsed - 0.2);
    // The bucket is empty now: an append over what refills is refused, and leaves the refill intact.
    now += 50; // 0.2 s of audio refilled
    expect(bound.take(0.3)).toBe(false);
    expect(bound.take(0.2)).toBe(true);
  });
});
