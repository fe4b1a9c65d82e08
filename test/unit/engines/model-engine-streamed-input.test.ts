/**
 * Engine jobs with streamed input: the items reach the runner in order and intact (their buffers moved,
 * not copied), the source is read no further than INPUT_CREDIT items ahead of the runner, a source that
 * fails fails the job with its own error, a job that ends, is left, aborted or refused closes its source,
 * and the replica serves the next job in every case. A replica runs several streamed jobs at once, so a
 * short one does not wait for a long one to finish.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ModelEngine } from '../../../src/engines/runtime/model-engine.js';
import { INPUT_CREDIT } from '../../../src/engines/runtime/protocol.js';
import { EngineCancelledError, EngineOverloadedError } from '../../../src/engines/errors.js';

const fixtures = path.resolve('test/fixtures/engines');
const engines: ModelEngine[] = [];

async function sumEngine(opts: { maxQueue?: number; jobsPerReplica?: number } = {}): Promise<ModelEngine> {
  const engine = new ModelEngine(
    {
      id: 'busy',
      aliases: [],
      engine: 'custom',
      dir: fixtures,
      absoluteDir: fixtures,
      replicas: 1,
      maxQueue: opts.maxQueue ?? 4,
      ...(opts.jobsPerReplica ? { jobsPerReplica: opts.jobsPerReplica } : {}),
      options: { module: 'busy-runner.ts' },
    },
    { intraOpThreads: 1, interOpThreads: 1 },
  );
  engines.push(engine);
  await engine.start();
  return engine;
}

afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

type Out = { index: number; length: number; sum: number } | { done: true; items: number };

/** A source of `n` arrays (item i: `size` values of i), recording how far it was read and whether it was closed. */
function source(n: number, size = 1000, failAt?: number) {
  const state = { pulled: 0, closed: false, items: [] as Float32Array[] };
  const iterable = (async function* () {
    try {
      for (let i = 0; i < n; i++) {
        if (i === failAt) throw new Error(`the source broke at item ${i}`);
        state.pulled++;
        const item = new Float32Array(size).fill(i);
        state.items.push(item);
        yield item;
      }
    } finally {
      state.closed = true;
    }
  })();
  return { iterable, state };
}

describe('ModelEngine: streamed input', () => {
  it('delivers every item to the runner in order and intact, moving the buffers', async () => {
    const engine = await sumEngine();
    const { iterable, state } = source(20);
    const out: Out[] = [];
    for await (const chunk of engine.stream<Out>('sum', {}, undefined, iterable)) out.push(chunk);
    expect(out).toEqual([...Array.from({ length: 20 }, (_, i) => ({ index: i, length: 1000, sum: i * 1000 })), { done: true, items: 20 }]);
    expect(state.items.every((item) => item.byteLength === 0)).toBe(true); // transferred to the worker
    expect(state.closed).toBe(true);
  });

  it('reads the source no more than INPUT_CREDIT items ahead of what the runner took', async () => {
    const engine = await sumEngine();
    const { iterable, state } = source(40);
    let maxAhead = 0;
    // A slow runner (20 ms per item) and a quick reader: without input credit the whole source would be read at once.
    for await (const chunk of engine.stream<Out>('sum', { stepMs: 20 }, undefined, iterable)) {
      if ('index' in chunk) maxAhead = Math.max(maxAhead, state.pulled - (chunk.index + 1));
    }
    expect(maxAhead).toBeGreaterThan(0);
    // +1: by the time an item's answer arrives, the runner may have taken the next item (and given its credit back).
    expect(maxAhead).toBeLessThanOrEqual(INPUT_CREDIT + 1);
  });

  it('a source that fails fails the job with its own error, and the replica serves the next job', async () => {
    const engine = await sumEngine();
    const { iterable } = source(10, 100, 4);
    const seen: number[] = [];
    const error = await (async () => {
      for await (const chunk of engine.stream<Out>('sum', {}, undefined, iterable)) if ('index' in chunk) seen.push(chunk.index);
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ message: 'the source broke at item 4' });
    expect(seen.length).toBeLessThanOrEqual(4);
    expect(engine.stats()).toMatchObject({ busy: 0, queued: 0 });
    const next = source(2);
    const out: Out[] = [];
    for await (const chunk of engine.stream<Out>('sum', {}, undefined, next.iterable)) out.push(chunk);
    expect(out.at(-1)).toEqual({ done: true, items: 2 });
  });

  it('leaving early, or an abort, closes the source and frees the replica', async () => {
    const engine = await sumEngine();
    const left = source(1000);
    for await (const chunk of engine.stream<Out>('sum', {}, undefined, left.iterable)) if ('index' in chunk && chunk.index === 3) break;
    await expect.poll(() => left.state.closed).toBe(true);
    expect(left.state.pulled).toBeLessThan(10);

    const controller = new AbortController();
    const aborted = source(1000);
    const error = await (async () => {
      for await (const chunk of engine.stream<Out>('sum', { stepMs: 2 }, controller.signal, aborted.iterable))
        if ('index' in chunk && chunk.index === 2) controller.abort();
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineCancelledError);
    await expect.poll(() => aborted.state.closed).toBe(true);
    expect(engine.stats()).toMatchObject({ busy: 0, queued: 0 });
  });

  it('a job refused for a full queue closes its source at once', async () => {
    const engine = await sumEngine({ maxQueue: 0, jobsPerReplica: 1 });
    const running = engine.run('spin', { steps: 20, stepMs: 10 });
    const refused = source(5);
    const error = await (async () => {
      for await (const _chunk of engine.stream<Out>('sum', {}, undefined, refused.iterable));
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineOverloadedError);
    // Closed before it was ever read: a generator closed unstarted has nothing more to give.
    expect(await refused.iterable.next()).toEqual({ done: true, value: undefined });
    expect(refused.state.pulled).toBe(0);
    await running;
  });

  it('a short job is served while a long one holds the replica (jobsPerReplica > 1)', async () => {
    const engine = await sumEngine({ jobsPerReplica: 2 });
    const long = source(400);
    let longTaken = 0;
    const longJob = (async () => {
      for await (const chunk of engine.stream<Out>('sum', { stepMs: 5 }, undefined, long.iterable)) if ('index' in chunk) longTaken = chunk.index + 1;
    })();
    await expect.poll(() => longTaken).toBeGreaterThan(5);
    const short = source(3);
    const out: Out[] = [];
    for await (const chunk of engine.stream<Out>('sum', {}, undefined, short.iterable)) out.push(chunk);
    expect(out.at(-1)).toEqual({ done: true, items: 3 });
    expect(longTaken).toBeLessThan(400); // the short job finished while the long one was still going
    await longJob;
  });
});
