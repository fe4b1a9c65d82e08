import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { startMemoryReducer, type MemoryReducer } from '../../../src/observability/memory-reducer.js';

const logger = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let reducer: MemoryReducer | undefined;
afterEach(() => reducer?.close());

it('collects once after the connections fall from a peak, and not while they hold or fall a little', async () => {
  let open = 0;
  reducer = startMemoryReducer({ connections: () => open, checkMs: 10, minDrop: 100, logger });
  open = 300;
  await sleep(50);
  open = 250; // a small drop: nothing to give back yet
  await sleep(50);
  expect(reducer.collections).toBe(0);
  open = 20; // the peak is over
  await expect.poll(() => reducer!.collections).toBe(1);
  await sleep(50);
  expect(reducer.collections).toBe(1); // once per peak: the next needs a new one
  open = 400;
  await sleep(50);
  open = 0;
  await expect.poll(() => reducer!.collections).toBe(2);
});

it('gives back the memory of buffers nothing references any more', async () => {
  let open = 0;
  reducer = startMemoryReducer({ connections: () => open, checkMs: 10, minDrop: 1, logger });
  open = 2;
  let held: ArrayBuffer[] | null = Array.from({ length: 400 }, () => new ArrayBuffer(256 * 1024)); // 100 MiB
  await sleep(50);
  const before = process.memoryUsage().arrayBuffers;
  held = null;
  open = 0;
  await expect.poll(() => reducer!.collections).toBe(1);
  await expect.poll(() => before - process.memoryUsage().arrayBuffers).toBeGreaterThan(50 * 1024 * 1024);
  expect(held).toBeNull();
});
