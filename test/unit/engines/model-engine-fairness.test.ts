/**
 * Fair scheduling on real worker replicas (busy-runner fixture; every job reports its rank among job starts
 * from a counter in shared memory): one account's flood delays another account's first job by at most one
 * job per replica; first jobs of requests go before continuations; continuations are never refused.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelEngine, type JobOptions } from '../../../src/engines/runtime/model-engine.js';
import { EngineOverloadedError } from '../../../src/engines/errors.js';

const fixtures = path.resolve('test/fixtures/engines');
const engines = new Map<number, ModelEngine>();

async function busyEngine(replicas: number, maxQueue: number): Promise<ModelEngine> {
  const engine = new ModelEngine(
    {
      id: `busy-${replicas}-${maxQueue}`,
      aliases: [],
      engine: 'custom',
      dir: fixtures,
      absoluteDir: fixtures,
      replicas,
      maxQueue,
      options: { module: 'busy-runner.ts' },
    },
    { intraOpThreads: 1, interOpThreads: 1 },
  );
  await engine.start();
  return engine;
}

beforeAll(async () => {
  engines.set(1, await busyEngine(1, 256));
  engines.set(2, await busyEngine(2, 256));
});
afterAll(async () => {
  await Promise.all([...engines.values()].map((e) => e.close()));
});

type Spun = { started: number };
const spin = (engine: ModelEngine, order: Int32Array, options: JobOptions, steps = 3) =>
  engine.run<Spun>('spin', { steps, stepMs: 4, startOrder: order }, undefined, options);
const newCounter = () => new Int32Array(new SharedArrayBuffer(4));

describe('fair scheduling across accounts', () => {
  for (const replicas of [1, 2]) {
    for (const flood of [6, 20]) {
      it(`${replicas} replica(s), account A floods ${flood} jobs: B's job starts after at most one A job per replica`, async () => {
        const engine = engines.get(replicas)!;
        const order = newCounter();
        let aDone = 0;
        const [A, B] = [`A-${replicas}-${flood}`, `B-${replicas}-${flood}`];
        const aJobs = Array.from({ length: flood }, () => spin(engine, order, { account: A }).then((r) => (aDone++, r)));
        // Once A's backlog is being served, B asks for one job.
        await aJobs[0];
        const doneWhenBArrived = aDone;
        const b = await spin(engine, order, { account: B }, 1);
        // Ranks are 0-based: B is handed to a replica after at most the A jobs done by then plus one running
        // per replica. A rank counts when a worker thread starts the job, and another replica's worker may start
        // an A job handed over after B before B's worker (descheduled on a loaded machine) starts B: one more
        // per other replica.
        expect(b.started).toBeLessThanOrEqual(doneWhenBArrived + replicas + (replicas - 1));
        const aRanks = (await Promise.all(aJobs)).map((r) => r.started);
        // Without fairness B would have waited for the whole backlog.
        expect(aRanks.filter((rank) => rank > b.started).length).toBeGreaterThanOrEqual(flood - doneWhenBArrived - 2 * replicas);
      });
    }
  }

  it('two backlogged accounts alternate', async () => {
    const engine = engines.get(1)!;
    const order = newCounter();
    const blocker = spin(engine, order, { account: 'alt-X' }, 10);
    const a = Array.from({ length: 5 }, () => spin(engine, order, { account: 'alt-A' }));
    const b = Array.from({ length: 5 }, () => spin(engine, order, { account: 'alt-B' }));
    await blocker;
    const ranks = [...(await Promise.all(a)), ...(await Promise.all(b))].map((r, i) => ({ who: i < 5 ? 'A' : 'B', rank: r.started }));
    const sequence = ranks
      .sort((x, y) => x.rank - y.rank)
      .map((r) => r.who)
      .join('');
    expect(sequence).toBe('ABABABABAB');
  });

  it("an account's first jobs of requests start before its continuations, whatever the order they arrived in", async () => {
    const engine = engines.get(1)!;
    const order = newCounter();
    const blocker = spin(engine, order, { account: 'X' }, 10);
    const continuations = Array.from({ length: 4 }, () => spin(engine, order, { account: 'A', priority: 'continuation' }));
    const openings = Array.from({ length: 4 }, () => spin(engine, order, { account: 'A', priority: 'opening' }));
    await blocker;
    const openingRanks = (await Promise.all(openings)).map((r) => r.started);
    const continuationRanks = (await Promise.all(continuations)).map((r) => r.started);
    expect(Math.max(...openingRanks)).toBeLessThan(Math.min(...continuationRanks));
  });

  it('a full queue refuses new requests but never a continuation of one under way', async () => {
    const engine = await busyEngine(1, 1);
    try {
      const order = newCounter();
      const running = spin(engine, order, { account: 'A' }, 10);
      const queued = spin(engine, order, { account: 'A' });
      await expect(spin(engine, order, { account: 'B' })).rejects.toBeInstanceOf(EngineOverloadedError);
      const continuations = Array.from({ length: 3 }, () => spin(engine, order, { account: 'B', priority: 'continuation' }));
      await Promise.all([running, queued, ...continuations]);
    } finally {
      await engine.close();
    }
  });
});
