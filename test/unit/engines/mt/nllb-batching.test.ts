/**
 * Translations batched across concurrent jobs (mt/nllb-batcher.ts) equal each job translated alone, for any
 * mix of jobs, sentence counts, lanes and batch sizes, and whichever of them are cancelled midway.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNllbRunner, type TranslateOutput } from '../../../../src/engines/mt/nllb-runner.js';
import type { Runner, RunnerContext } from '../../../../src/engines/runner.js';
import { ModelEntrySchema } from '../../../../src/engines/manifest.js';
import { DEMO_GLOSSARY, generateNllbModel } from '../../../../models/generator/demo-nllb.js';

let root: string;
let solo: Runner;

const load = (options: Record<string, unknown>) =>
  createNllbRunner({ entry: ModelEntrySchema.parse({ id: 'banjugu-1', engine: 'nllb', dir: root, options }), dir: root, intraOpThreads: 1, interOpThreads: 1 });
const ctx = (signal = new AbortController().signal): RunnerContext => ({ signal, checkpoint: async () => {} });
const call = (runner: Runner, text: string, signal?: AbortSignal) =>
  runner.call('translate', { texts: [text], source: 'bam', target: 'fra' }, ctx(signal)) as Promise<TranslateOutput>;

beforeAll(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-nllb-batch-'));
  await generateNllbModel(dir, { tokenizer: 'bpe' });
  root = path.join(dir, 'nllb');
  solo = await load({});
});

afterAll(async () => {
  await solo.close();
  fs.rmSync(path.dirname(root), { recursive: true, force: true });
});

const word = fc.constantFrom(...DEMO_GLOSSARY.slice(0, 40).map((g) => g.bam), 'Bamako', '2024');
const sentence = fc.array(word, { minLength: 1, maxLength: 8 }).map((w) => w.join(' '));
const text = fc.array(sentence, { minLength: 1, maxLength: 3 }).map((s) => s.join('. '));

describe('translation batched across concurrent jobs', () => {
  it('gives every job what it gets alone, and cancelled jobs fail without disturbing the others', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ text, cancelAfterMs: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }) }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 5 }),
        async (jobs, batchLanes, maxBatchSentences) => {
          const runner = await load({ batchLanes, maxBatchSentences });
          try {
            const expected = await Promise.all(jobs.map((j) => call(solo, j.text)));
            const outcomes = await Promise.allSettled(
              jobs.map((j) => {
                const controller = new AbortController();
                if (j.cancelAfterMs !== undefined) setTimeout(() => controller.abort(), j.cancelAfterMs);
                return call(runner, j.text, controller.signal);
              }),
            );
            outcomes.forEach((outcome, i) => {
              if (outcome.status === 'fulfilled') expect(outcome.value).toEqual(expected[i]);
              else {
                expect(jobs[i]!.cancelAfterMs).toBeDefined();
                expect(String(outcome.reason)).toMatch(/cancel/i);
              }
            });
          } finally {
            await runner.close();
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
