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

it('counts this process only: another process keeping a CPU busy does not raise it', async () => {
  // Another program on the machine (a browser beside the server, here a child spinning for a second) used to
  // count as the server being busy and turned interims off.
  const { spawn } = await import('node:child_process');
  const spinner = spawn(process.execPath, ['-e', 'const end = Date.now() + 1500; while (Date.now() < end);'], { stdio: 'ignore' });
  const load = watchCpuLoad(50);
  const seen: number[] = [];
  try {
    await new Promise((resolve) => setTimeout(resolve, 200)); // the child is past its start-up
    for (let i = 0; i < 10; i++) {
      await new Promise((resolve) => setTimeout(resolve, 60));
      seen.push(load.busyShare());
    }
  } finally {
    load.close();
    spinner.kill();
  }
  // This process slept throughout: its share stays near 0, far from the spinning core's share of the machine.
  expect(Math.max(...seen)).toBeLessThan(0.2);
});
