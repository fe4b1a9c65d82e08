/**
 * Admission control seen over HTTP: when a model's queue is full, a request is refused at once with 503,
 * Retry-After and the error envelope, instead of waiting; /readyz reports not-ready until models are warm.
 */
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { EngineRegistry } from '../../src/engines/engine-registry.js';
import { ModelEngine } from '../../src/engines/runtime/model-engine.js';
import type { RouteDef } from '../../src/api/types.js';

const fixtures = path.resolve('test/fixtures/engines');
let t: TestServer;
let engines: EngineRegistry;

beforeAll(async () => {
  const busy = new ModelEngine(
    { id: 'busy', aliases: [], engine: 'custom', dir: fixtures, absoluteDir: fixtures, replicas: 1, maxQueue: 1, options: { module: 'busy-runner.ts' } },
    { intraOpThreads: 1, interOpThreads: 1 },
  );
  engines = new EngineRegistry([busy]);
  const route: RouteDef = {
    method: 'POST',
    path: '/test/compute',
    surface: 'compat',
    auth: true,
    handler: async (req) => ({ kind: 'json', body: await engines.get('busy')!.run('spin', { steps: 30, stepMs: 10 }, req.signal) }),
  };
  t = await startTestServer({ engines, extraRoutes: () => [route] });
});
afterAll(async () => {
  await t.close();
  await engines.close();
});

it('/readyz is 503 until the models are loaded and warmed, then 200', async () => {
  const early = await fetch(`${t.baseUrl}/readyz`);
  // Loading takes a worker start; if it already finished, the not-ready state was too short to see.
  if (early.status === 503) expect(((await early.json()) as any).checks).toContainEqual(expect.objectContaining({ name: 'models', ready: false }));
  await t.server.enginesReady;
  expect((await fetch(`${t.baseUrl}/readyz`)).status).toBe(200);
});

it('a full model queue answers 503 with Retry-After at once, instead of waiting', async () => {
  await t.server.enginesReady;
  const post = () => fetch(`${t.baseUrl}/compat/v1/test/compute`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` } });
  const running = post();
  let runningSettled = false;
  void running.finally(() => (runningSettled = true));
  await new Promise((r) => setTimeout(r, 50));
  const queued = post();
  await new Promise((r) => setTimeout(r, 50));
  const refused = await post();
  // "At once": the refusal does not wait for a place, so it comes while the running request still holds it.
  expect(runningSettled).toBe(false);
  expect(refused.status).toBe(503);
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(await refused.json()).toEqual({ error: { message: expect.stringMatching(/capacity/), type: 'api_error', param: null, code: 'service_unavailable' } });
  expect((await running).status).toBe(200);
  expect((await queued).status).toBe(200);
});
