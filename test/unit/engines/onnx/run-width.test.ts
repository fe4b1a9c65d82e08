/** Adaptive run width (src/engines/onnx/run-width.ts): which width a run takes, and when it waits for a wide run. */
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  clearSlot,
  createRunSlots,
  LOAD_WINDOW_MS,
  NARROW_MAX_MS,
  recentLoad,
  runsGoingOn,
  runWidths,
  widthFor,
  WIDE_MAX_LOAD,
  withRunWidth,
  type RunCosts,
  type RunGate,
} from '../../../../src/engines/onnx/run-width.js';

function gate(slot = 0): RunGate {
  return { ...createRunSlots(), slot };
}

describe('run widths', () => {
  it('holds powers of two up to the threads, and the threads themselves', () => {
    expect(runWidths(1)).toEqual([1]);
    expect(runWidths(2)).toEqual([1, 2]);
    expect(runWidths(6)).toEqual([1, 2, 4, 6]);
    expect(runWidths(16)).toEqual([1, 2, 4, 8, 16]);
  });

  it('never gives runs together more threads than the replica has, and a lone run all of them', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 64 }), (threads, running) => {
        const widths = runWidths(threads);
        const width = widthFor(widths, threads, running);
        expect(widths).toContain(width);
        expect(width === 1 || width * running <= threads).toBe(true);
        expect(widthFor(widths, threads, 1)).toBe(threads);
      }),
    );
  });
});

/** Another worker ran 2 cores flat out over the last window (slot 1): a busy machine. */
function busy(g: RunGate): void {
  Atomics.store(g.load, 2, Date.now() % 2 ** 31);
  Atomics.store(g.load, 3, Math.round(LOAD_WINDOW_MS * 2 * 0.9 * 10));
}

describe('withRunWidth', () => {
  // One model's learned costs: each test starts from none.
  let costs: RunCosts;
  beforeEach(() => {
    costs = new Map();
  });

  it('takes the widest alone and a share beside another worker running, and marks its slot only while it runs', async () => {
    const g = gate(3);
    const seen: Array<[number, number]> = [];
    await withRunWidth(g, [1, 2], 100, costs, async (width) => void seen.push([width, runsGoingOn(g.slots)]));
    Atomics.store(g.slots, 7, 1); // another worker's run
    await withRunWidth(g, [1, 2], 100, costs, async (width) => void seen.push([width, runsGoingOn(g.slots)]));
    expect(seen).toEqual([
      [2, 1],
      [1, 2],
    ]);
    expect(Atomics.load(g.slots, 3)).toBe(0);
  });

  it('runs one at a time in a worker, in order, whatever the jobs that ask at once', async () => {
    const g = gate();
    let inside = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        withRunWidth(g, [1, 2], 10, costs, async () => {
          inside++;
          expect(inside).toBe(1);
          await new Promise((resolve) => setTimeout(resolve, 1));
          order.push(i);
          inside--;
        }),
      ),
    );
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('frees the slot and the wide mark when a run fails', async () => {
    const g = gate();
    await withRunWidth(g, [1, 2], 10, costs, async () => undefined); // learns the wide cost, so the next wide run is marked
    const generation = Atomics.load(g.wide, 0);
    await expect(withRunWidth(g, [1, 2], 10, costs, async () => Promise.reject(new Error('bad input')))).rejects.toThrow('bad input');
    expect(runsGoingOn(g.slots)).toBe(0);
    expect(Atomics.load(g.wide, 1)).toBe(0);
    expect(Atomics.load(g.wide, 0)).toBe(generation + 1);
  });

  it('waits for a wide run of another worker that is due soon, rather than start beside it', async () => {
    const g = gate(0);
    // Another worker holds a wide run due in 400 ms (its slot and the due time set), and ends it after 50 ms.
    const worker = new Worker(
      `const { workerData, parentPort } = require('node:worker_threads');
       const { slots, wide } = workerData;
       Atomics.store(slots, 1, 1);
       Atomics.store(wide, 1, (Date.now() + 400) % 2 ** 31);
       parentPort.postMessage('holding');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
       Atomics.store(slots, 1, 0);
       Atomics.store(wide, 1, 0);
       Atomics.add(wide, 0, 1);
       Atomics.notify(wide, 0);`,
      { eval: true, workerData: { slots: g.slots, wide: g.wide } },
    );
    await new Promise((resolve) => worker.once('message', resolve));
    // 100 elements: 100 ms wide, 1 s narrow — waiting ≤ 400 ms and then running wide is sooner.
    costs.set(2, 1).set(1, 10);
    let running = -1;
    let width = 0;
    await withRunWidth(g, [1, 2], 100, costs, async (w) => {
      width = w;
      running = runsGoingOn(g.slots);
    });
    // Had it not waited, the other run would still be marked and it would have run narrow beside it.
    expect(running).toBe(1);
    expect(width).toBe(2);
    await worker.terminate();
  });

  it('does not wait for a wide run due later than this run would take narrow, and runs beside it narrow', async () => {
    const g = gate(0);
    costs.set(2, 1).set(1, 2);
    Atomics.store(g.slots, 1, 1);
    Atomics.store(g.wide, 1, (Date.now() + 10_000) % 2 ** 31);
    let width = 0;
    await withRunWidth(g, [1, 2], 10, costs, async (w) => void (width = w));
    expect(width).toBe(1);
  });

  it('runs at the widest with no gate', async () => {
    let width = 0;
    await withRunWidth(null, [1, 2, 4], 10, costs, async (w) => void (width = w));
    expect(width).toBe(4);
  });

  it('goes narrow alone while the recent load is high, wide again once it has decayed, and a cleared slot leaves no load', async () => {
    const g = gate(0);
    const now = Date.now() % 2 ** 31;
    // Another worker ran 2 cores flat out for the last window: a load of ≈ 0.63 of 2 cores (1 − 1/e).
    Atomics.store(g.load, 2, now);
    Atomics.store(g.load, 3, Math.round(LOAD_WINDOW_MS * 2 * (1 - Math.exp(-1)) * 10));
    expect(recentLoad(g.load, 2, now)).toBeGreaterThanOrEqual(WIDE_MAX_LOAD);
    let width = 0;
    await withRunWidth(g, [1, 2], 10, costs, async (w) => void (width = w));
    expect(width).toBe(1);
    // The same load stamped three windows ago has decayed below the bar.
    Atomics.store(g.load, 2, (now - 3 * LOAD_WINDOW_MS + 2 ** 31) % 2 ** 31);
    expect(recentLoad(g.load, 2)).toBeLessThan(WIDE_MAX_LOAD);
    clearSlot(g, 0); // this worker's own run counted too: start from nothing
    await withRunWidth(g, [1, 2], 10, costs, async (w) => void (width = w));
    expect(width).toBe(2);
    clearSlot(g, 1);
    clearSlot(g, 0);
    expect(recentLoad(g.load, 2)).toBe(0);
  });

  it('counts the core-time of a run as load: width × duration', async () => {
    const g = gate(5);
    await withRunWidth(g, [1, 2], 10, costs, async () => new Promise((resolve) => setTimeout(resolve, 30)));
    const load = recentLoad(g.load, 2);
    expect(load).toBeGreaterThan(0);
    expect(load).toBeLessThan(1);
  });

  it('runs wide alone on a busy machine when a narrow run would take longer than NARROW_MAX_MS', async () => {
    const g = gate(0);
    costs.set(1, 1).set(2, 0.6); // narrow does more per core: 1 core-ms per element against 1.2
    busy(g);
    let width = 0;
    await withRunWidth(g, [1, 2], NARROW_MAX_MS + 200, costs, async (w) => void (width = w));
    expect(width).toBe(2); // too long narrow: wide
    costs.set(1, 1).set(2, 0.6); // (the run above, instant here, was averaged in)
    await withRunWidth(g, [1, 2], 10, costs, async (w) => void (width = w));
    expect(width).toBe(1); // short: the load rule holds
    clearSlot(g, 1);
    clearSlot(g, 0);
  });

  it('stays wide alone on a busy machine when the narrow width does less per core (as XLS-R-300M measured)', async () => {
    const g = gate(0);
    costs.set(1, 2.2).set(2, 1); // 2.2 core-ms per element narrow, 2 wide
    busy(g);
    let width = 0;
    await withRunWidth(g, [1, 2], 10, costs, async (w) => void (width = w));
    expect(width).toBe(2);
    clearSlot(g, 1);
    clearSlot(g, 0);
  });

  it("learns each model's costs apart: a decoder step's runs do not teach its encoder's estimates", async () => {
    const g = gate(0);
    const encoder: RunCosts = new Map([[2, 1]]);
    await withRunWidth(g, [1, 2], 1000, costs, async () => undefined); // another model of the same worker
    expect(encoder).toEqual(new Map([[2, 1]]));
    expect(costs.size).toBe(1);
  });
});
