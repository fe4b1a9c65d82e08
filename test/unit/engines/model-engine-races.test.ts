/**
 * Every engine call settles on every interleaving of the consumer leaving, the signal aborting, the worker
 * ending, failing and crashing — and the replica is then free for the next job (P6 items 1 and 12).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { ModelEngine } from '../../../src/engines/runtime/model-engine.js';
import { EngineCancelledError, EngineFailedError } from '../../../src/engines/errors.js';

const fixtures = path.resolve('test/fixtures/engines');
const engines: ModelEngine[] = [];

async function busyEngine(opts: { replicas?: number; maxQueue?: number; cancelGraceMs?: number; failLoadIfExists?: string } = {}): Promise<ModelEngine> {
  const engine = new ModelEngine(
    {
      id: 'busy',
      aliases: [],
      engine: 'custom',
      dir: fixtures,
      absoluteDir: fixtures,
      replicas: opts.replicas ?? 1,
      maxQueue: opts.maxQueue ?? 8,
      options: { module: 'busy-runner.ts', ...(opts.failLoadIfExists ? { failLoadIfExists: opts.failLoadIfExists } : {}) },
    },
    { intraOpThreads: 1, interOpThreads: 1 },
    opts.cancelGraceMs,
  );
  engines.push(engine);
  await engine.start();
  return engine;
}

/** Fails the test (instead of hanging it) when `p` does not settle in time. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`did not settle within ${ms} ms: ${what}`)), ms))]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

describe('ModelEngine settles on every interleaving', () => {
  it('a consumer that leaves after the worker has already ended the stream frees the replica', async () => {
    const engine = await busyEngine();
    // 3 chunks fit within the stream credit: the worker sends them and `end` before the consumer reads one.
    const leave = async () => {
      for await (const chunk of engine.stream<{ i: number }>('count', { n: 3 })) {
        await sleep(100);
        if (chunk.i === 0) break;
      }
    };
    await within(leave(), 5_000, 'leaving a stream whose end was already queued');
    expect(engine.stats()).toEqual({ replicas: 1, lanes: 1, busy: 0, queued: 0 });
    expect(await within(engine.run('spin', { steps: 1, stepMs: 1 }), 5_000, 'the next job')).toMatchObject({ steps: 1 });
  });

  it('leaving or aborting at any offset, before or after the worker ends, always frees the replica', async () => {
    const engine = await busyEngine();
    let cases = 0;
    for (const n of [1, 2, 4, 5, 9]) {
      for (let leaveAt = 0; leaveAt <= n; leaveAt++) {
        for (const pauseMs of [0, 2, 30]) {
          for (const how of ['break', 'abort'] as const) {
            const controller = new AbortController();
            const consume = async () => {
              let seen = 0;
              try {
                for await (const _ of engine.stream('count', { n, stepMs: 1 }, controller.signal)) {
                  if (pauseMs) await sleep(pauseMs);
                  if (++seen >= leaveAt) {
                    if (how === 'break') break;
                    controller.abort();
                  }
                }
              } catch (err) {
                if (!(err instanceof EngineCancelledError)) throw err;
              }
            };
            await within(consume(), 5_000, `n=${n} leaveAt=${leaveAt} pause=${pauseMs} ${how}`);
            cases++;
          }
        }
      }
    }
    expect(cases).toBeGreaterThan(100);
    expect(engine.stats()).toEqual({ replicas: 1, lanes: 1, busy: 0, queued: 0 });
    expect(await within(engine.run('spin', { steps: 1, stepMs: 1 }), 5_000, 'the next job')).toMatchObject({ steps: 1 });
  }, 60_000);

  it('an abort racing a one-shot result settles either way and frees the replica', async () => {
    const engine = await busyEngine();
    for (let delay = 0; delay < 12; delay++) {
      const controller = new AbortController();
      const job = engine.run('spin', { steps: 3, stepMs: 2 }, controller.signal);
      setTimeout(() => controller.abort(), delay);
      const outcome = await within(
        job.then(
          () => 'done',
          (e: Error) => e,
        ),
        5_000,
        `abort after ${delay} ms`,
      );
      if (outcome !== 'done') expect(outcome).toBeInstanceOf(EngineCancelledError);
    }
    expect(engine.stats()).toMatchObject({ busy: 0, queued: 0 });
  });

  it('jobs queued behind a replica that crashes are served by its replacement', async () => {
    const engine = await busyEngine({ replicas: 1, maxQueue: 4 });
    const crashing = engine.run('exit', {}).catch((e: Error) => e);
    const queued = [1, 2, 3].map((i) => engine.run<{ steps: number }>('spin', { steps: i, stepMs: 1 }));
    expect(await crashing).toBeInstanceOf(EngineFailedError);
    const results = await within(Promise.all(queued), 15_000, 'queued jobs after a crash');
    expect(results.map((r) => r.steps)).toEqual([1, 2, 3]);
    expect(engine.stats()).toEqual({ replicas: 1, lanes: 1, busy: 0, queued: 0 });
  });

  it('a streaming job whose worker crashes fails, and the queue behind it is served', async () => {
    const engine = await busyEngine({ replicas: 1, maxQueue: 4 });
    const queued = engine.run('spin', { steps: 1, stepMs: 1 });
    const stream = (async () => {
      for await (const _ of engine.stream('count', { n: 100, exitAfter: 10 })) await sleep(1);
    })().catch((e: Error) => e);
    expect(await within(stream, 10_000, 'stream after crash')).toBeInstanceOf(EngineFailedError);
    expect(await within(queued, 15_000, 'the job queued behind the stream')).toMatchObject({ steps: 1 });
    expect(await within(engine.run('spin', { steps: 1, stepMs: 1 }), 15_000, 'a later job')).toMatchObject({ steps: 1 });
  });

  it('when no replacement can start, queued jobs fail instead of waiting forever, and service resumes later', async () => {
    const flag = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-engine-')), 'no-load');
    const engine = await busyEngine({ replicas: 1, maxQueue: 4, failLoadIfExists: flag });
    fs.writeFileSync(flag, '');
    const crashing = engine.run('exit', {}).catch((e: Error) => e);
    const queued = [1, 2].map((i) =>
      engine.run('spin', { steps: i, stepMs: 1 }).then(
        () => 'served',
        (e: Error) => e,
      ),
    );
    expect(await crashing).toBeInstanceOf(EngineFailedError);
    for (const outcome of await within(Promise.all(queued), 10_000, 'queued jobs with no replacement')) {
      expect(outcome).toBeInstanceOf(EngineFailedError);
    }
    await expect(engine.run('spin', { steps: 1 })).rejects.toBeInstanceOf(EngineFailedError);
    fs.rmSync(flag);
    await expect.poll(() => engine.stats().replicas, { timeout: 15_000 }).toBe(1);
    expect(await engine.run('spin', { steps: 1, stepMs: 1 })).toMatchObject({ steps: 1 });
  }, 30_000);

  it('a worker that never confirms a cancel is killed after the grace period and replaced', async () => {
    const engine = await busyEngine({ cancelGraceMs: 200 });
    const controller = new AbortController();
    const job = engine.run('stuck', { stepMs: 60_000 }, controller.signal).catch((e: Error) => e);
    await sleep(50);
    controller.abort();
    expect(await within(job, 5_000, 'a stuck job after abort')).toBeInstanceOf(Error);
    expect(await within(engine.run('spin', { steps: 1, stepMs: 1 }), 15_000, 'the next job')).toMatchObject({ steps: 1 });
  });

  it('a long-lived signal keeps no abort listeners from queued acquisitions', async () => {
    const engine = await busyEngine({ replicas: 1, maxQueue: 4 });
    const session = new AbortController();
    for (let i = 0; i < 20; i++) {
      const blocker = engine.run('spin', { steps: 2, stepMs: 1 });
      const queued = engine.run('spin', { steps: 1, stepMs: 1 }, session.signal);
      await Promise.all([blocker, queued]);
    }
    expect(getEventListeners(session.signal, 'abort')).toHaveLength(0);
  });
});
