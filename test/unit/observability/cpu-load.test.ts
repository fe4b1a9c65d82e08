/** watchCpuLoad: a share in [0, 1], and above 0 once this process has kept a CPU busy for a few intervals. */
import { expect, it } from 'vitest';
import { watchCpuLoad } from '../../../src/observability/cpu-load.js';

it('reports a busy share in [0, 1] that is above 0 while a CPU is kept busy', async () => {
  const load = watchCpuLoad(50);
  try {
    expect(load.busyShare()).toBe(0);
    // Busy for 300 ms, yielding every 20 ms so the sampling timer runs: the machine cannot have been idle throughout.
    const end = performance.now() + 300;
    while (performance.now() < end) {
      const slice = performance.now() + 20;
      while (performance.now() < slice);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const share = load.busyShare();
    expect(share).toBeGreaterThan(0);
    expect(share).toBeLessThanOrEqual(1);
  } finally {
    load.close();
  }
});
