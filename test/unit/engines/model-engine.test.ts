/** The engine runtime: jobs in worker threads, streaming with flow control, cancellation, admission control, crash recovery. */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ModelEngine } from '../../../src/engines/runtime/model-engine.js';
import { EngineCancelledError, EngineFailedError, EngineOverloadedError } from '../../../src/engines/errors.js';

const fixtures = path.resolve('test/fixtures/engines');
const engines: ModelEngine[] = [];

async function busyEngine(replicas = 1, maxQueue = 4): Promise<ModelEngine> {
  const engine = new ModelEngine(
    { id: 'busy', aliases: [], engine: 'custom', dir: fixtures, absoluteDir: fixtures, replicas, maxQueue, options: { module: 'busy-runner.ts' } },
    { intraOpThreads: 1, interOpThreads: 1 },
  );
  engines.push(engine);
  await engine.start();
  return engine;
}

afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

describe('ModelEngine', () => {
  it('runs a job in a worker thread and returns its result', async () => {
    const engine = await busyEngine();
    expect(engine.ready).toBe(true);
    expect(engine.info).toEqual({ engine: 'busy', id: 'busy' });
    expect(await engine.run('spin', { steps: 2, stepMs: 1 })).toEqual({ steps: 2, thread: 'worker' });
  });

  it('streams chunks with their typed arrays intact', async () => {
    const engine = await busyEngine();
    const got: number[] = [];
    for await (const chunk of engine.stream<{ i: number; samples: Float32Array }>('count', { n: 10 })) {
      expect(chunk.samples).toBeInstanceOf(Float32Array);
      got.push(chunk.samples[0]!);
    }
    expect(got).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('a consumer that stops early cancels the job and frees the replica', async () => {
    const engine = await busyEngine();
    for await (const chunk of engine.stream<{ i: number }>('count', { n: 1_000_000 })) if (chunk.i === 2) break;
    expect(engine.stats()).toEqual({ replicas: 1, lanes: 1, busy: 0, queued: 0 });
    expect(await engine.run('spin', { steps: 1, stepMs: 1 })).toMatchObject({ steps: 1 });
  });

  // How quickly (< 100 ms) is measured in test/timing/engine-abort.timing.test.ts, alone on the cores.
  it('an abort is seen by the worker between steps and rejects the job', async () => {
    const engine = await busyEngine();
    const controller = new AbortController();
    const job = engine.run('spin', { steps: 1000, stepMs: 10 }, controller.signal);
    await new Promise((r) => setTimeout(r, 50));
    controller.abort();
    await expect(job).rejects.toBeInstanceOf(EngineCancelledError);
  });

  it('a full queue refuses at once with a Retry-After estimate', async () => {
    const engine = await busyEngine(1, 1);
    const running = engine.run('spin', { steps: 20, stepMs: 10 });
    const queued = engine.run('spin', { steps: 1, stepMs: 1 });
    let runningSettled = false;
    void running.finally(() => (runningSettled = true));
    const refused = (await engine.run('spin', { steps: 1, stepMs: 1 }).catch((e) => e)) as EngineOverloadedError;
    // "At once": the refusal does not wait for a place, so it comes while the running job still holds it.
    expect(runningSettled).toBe(false);
    expect(refused).toBeInstanceOf(EngineOverloadedError);
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    await Promise.all([running, queued]);
  });

  it('a runner error rejects the job and the replica keeps serving', async () => {
    const engine = await busyEngine();
    await expect(engine.run('fail', {})).rejects.toThrow(EngineFailedError);
    expect(await engine.run('spin', { steps: 1, stepMs: 1 })).toMatchObject({ steps: 1 });
  });

  it('a worker that dies fails its job and is replaced', async () => {
    const engine = await busyEngine();
    await expect(engine.run('exit', {})).rejects.toThrow(/exited with code 3/);
    await expect.poll(() => engine.stats().replicas, { timeout: 10_000 }).toBe(1);
    expect(await engine.run('spin', { steps: 1, stepMs: 1 })).toMatchObject({ steps: 1 });
  });
});
