import { describe, expect, it } from 'vitest';
import { cadenceDeviations, pacingDeviations, playoutGaps } from '../../../load-tests/telephony/reply-timing.js';

/** Arrival times of `n` frames on a 20 ms cadence from `start`, the first `lead` sent with the first on-time one. */
function paced(n: number, start = 1000, lead = 1): number[] {
  return Array.from({ length: n }, (_, i) => start + 20 * Math.max(0, i - lead));
}

describe('cadenceDeviations', () => {
  it('a reply exactly on its cadence (after the lead frame) deviates by 0 everywhere', () => {
    expect(cadenceDeviations(paced(50))).toEqual(Array(49).fill(0));
  });

  it('one frame 7 ms late deviates by 7; a frame early sets the reference for the others', () => {
    const late = paced(10);
    late[5]! += 7;
    expect(cadenceDeviations(late)[4]).toBe(7);
    const early = paced(10);
    early[5]! -= 3;
    expect(cadenceDeviations(early)).toEqual([3, 3, 3, 3, 0, 3, 3, 3, 3]);
  });

  it('a gap counts on every frame after it', () => {
    const arrivals = paced(10).map((at, i) => (i >= 6 ? at + 100 : at));
    expect(cadenceDeviations(arrivals)).toEqual([0, 0, 0, 0, 0, 100, 100, 100, 100]);
  });
});

describe('playoutGaps and pacingDeviations', () => {
  it('a reply that arrives in time has no gap', () => {
    expect(playoutGaps(paced(50))).toEqual({ count: 0, totalMs: 0 });
  });

  it('the buffer runs dry once for a 100 ms hole: one gap of the silence heard', () => {
    // Frame 6 is due to play at 1000 + 6 × 20 (the lead frame and the first were played from 1000).
    const arrivals = [...paced(6), ...paced(4, 1000 + 5 * 20 + 100)];
    expect(playoutGaps(arrivals).count).toBe(1);
    expect(playoutGaps(arrivals).totalMs).toBe(80);
  });

  it('pacing jitter restarts at each gap, each run with its own lead frame', () => {
    const arrivals = [...paced(6), ...paced(4, 1000 + 5 * 20 + 100)];
    expect(pacingDeviations(arrivals)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(Math.max(...cadenceDeviations(arrivals))).toBeGreaterThan(50);
  });
});
