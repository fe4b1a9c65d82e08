/**
 * With shared weights, one replica of a model is its lead: the only one whose widest session keeps a memory
 * arena (onnx/session.ts), so a second replica costs its threads, not a second arena of hundreds of MB. That
 * pays only if a lone job — a REST upload's long windows, run wide — lands on the lead: this checks, on real
 * worker replicas (busy-runner fixture), that exactly one replica is the lead, that a job alone always goes to
 * it, and that the lead's replacement after a crash is the lead again.
 */
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { ModelEngine } from '../../../src/engines/runtime/model-engine.js';

const fixtures = path.resolve('test/fixtures/engines');
let engine: ModelEngine | null = null;
afterEach(async () => {
  await engine?.close();
  engine = null;
});

async function start(replicas: number, shared: boolean): Promise<ModelEngine> {
  const started = new ModelEngine(
    {
      id: `lead-${replicas}`,
      aliases: [],
      engine: 'custom',
      dir: fixtures,
      absoluteDir: fixtures,
      replicas,
      maxQueue: 64,
      options: { module: 'busy-runner.ts' },
    },
    { intraOpThreads: 1, interOpThreads: 1, sharedWeights: shared ? { cacheDir: path.join(os.tmpdir(), 'kuma-lead-replica'), minBytes: 1 } : null },
  );
  await started.start();
  return started;
}

type Who = { threadId: number; lead: boolean | null };
const whoami = (steps = 1) => engine!.run<Who>('whoami', { steps, stepMs: 20 });

it('exactly one of the replicas sharing weights is the lead, and a job alone always runs on it', async () => {
  engine = await start(3, true);
  const together = await Promise.all([whoami(5), whoami(5), whoami(5)]);
  expect(new Set(together.map((w) => w.threadId)).size).toBe(3);
  expect(together.filter((w) => w.lead).length).toBe(1);
  const lead = together.find((w) => w.lead)!.threadId;
  for (let i = 0; i < 5; i++) expect(await whoami()).toEqual({ threadId: lead, lead: true });
});

it("the lead's replacement after a crash is the lead, and takes the lone jobs again", async () => {
  engine = await start(2, true);
  const before = await whoami();
  expect(before.lead).toBe(true);
  await expect(engine.run('exit', {})).rejects.toThrow(/exited with code 3/); // alone: it ran on the lead
  await expect.poll(() => engine!.stats().replicas, { timeout: 10_000 }).toBe(2);
  const after = await whoami();
  expect(after.lead).toBe(true);
  expect(after.threadId).not.toBe(before.threadId);
  const together = await Promise.all([whoami(5), whoami(5)]);
  expect(together.filter((w) => w.lead).length).toBe(1);
});

it('replicas that do not share weights have no lead (each keeps its own arena)', async () => {
  engine = await start(2, false);
  const together = await Promise.all([whoami(5), whoami(5)]);
  expect(together.map((w) => w.lead)).toEqual([null, null]);
});
