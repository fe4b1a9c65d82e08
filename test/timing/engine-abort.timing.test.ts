/**
 * An aborted engine job rejects within 100 ms: the worker sees the abort between two 10 ms steps of a
 * 10 s job. Measured here, alone on the cores, because the main suite's parallel load (servers, a
 * PostgreSQL cluster) once stretched it to 112 ms — the machine's, not the engine's, delay.
 */
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ModelEngine } from '../../src/engines/runtime/model-engine.js';
import { EngineCancelledError } from '../../src/engines/errors.js';

const fixtures = path.resolve('test/fixtures/engines');
const engine = new ModelEngine(
  { id: 'busy', aliases: [], engine: 'custom', dir: fixtures, absoluteDir: fixtures, replicas: 1, maxQueue: 4, options: { module: 'busy-runner.ts' } },
  { intraOpThreads: 1, interOpThreads: 1 },
);
afterAll(() => engine.close());

it('an abort is seen by the worker between steps and rejects within 100 ms', async () => {
  await engine.start();
  const controller = new AbortController();
  const job = engine.run('spin', { steps: 1000, stepMs: 10 }, controller.signal);
  await new Promise((r) => setTimeout(r, 50));
  const t0 = performance.now();
  controller.abort();
  await expect(job).rejects.toBeInstanceOf(EngineCancelledError);
  expect(performance.now() - t0).toBeLessThan(100);
});
