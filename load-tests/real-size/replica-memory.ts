/**
 * `npm run bench:replica-memory -- [--model wav2vec2-base] [--threads 0] [--no-write]`: what a second replica of a real-size
 * model costs in memory. Each configuration runs in a fresh process (Kuma's engine registry, the model from the
 * pack, replicas 1 or 2, shared weights on or off — KUMA_ENGINE_SHARE_WEIGHTS), which loads, warms and runs
 * one 10 s job on every replica, then reports its resident memory (RSS) and proportional set size (PSS: pages
 * shared between mappings counted once) from /proc/self/smaps_rollup.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { defaultPackDir } from '../../models/real-size/generate.js';
import { EngineRegistry } from '../../src/engines/engine-registry.js';
import { recordSection } from '../results.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'wav2vec2-base' },
    child: { type: 'string' },
    share: { type: 'string', default: 'true' },
    threads: { type: 'string', default: '0' },
    'no-write': { type: 'boolean', default: false },
  },
});
const dir = path.join(defaultPackDir(), values.model);
const engine = (JSON.parse(fs.readFileSync(path.join(dir, '.complete.json'), 'utf8')) as { engine: string }).engine;

function memory(): { rss: number; pss: number } {
  const text = fs.readFileSync('/proc/self/smaps_rollup', 'utf8');
  const read = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)![1]) / 1024;
  return { rss: read('Rss'), pss: read('Pss') };
}

if (values.child) {
  // One configuration, in this fresh process.
  const replicas = Number(values.child);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-replicas-'));
  const manifest = path.join(tmp, 'manifest.json');
  fs.writeFileSync(manifest, JSON.stringify({ models: [{ id: 'm', engine, dir, replicas, jobsPerReplica: 1, options: { warmupSeconds: 10 } }] }));
  const cacheDir = path.join(os.tmpdir(), 'kuma-replica-memory-cache');
  const registry = EngineRegistry.fromManifest(manifest, 'djelia', {
    intraOpThreads: Number(values.threads),
    interOpThreads: 1,
    sharedWeights: values.share === 'true' ? { cacheDir, minBytes: 64 * 2 ** 20 } : null,
  });
  await registry.start();
  const samples = new Float32Array(160_000).map((_, i) => Math.sin(i / 9) * 0.2);
  await Promise.all(Array.from({ length: replicas }, () => registry.get('m')!.run('frames', { samples, skip: 0, take: null })));
  await new Promise((resolve) => setTimeout(resolve, 1000));
  process.stdout.write(JSON.stringify(memory()));
  await registry.close();
  fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
}

const self = fileURLToPath(import.meta.url);
const run = (replicas: number, share: boolean) =>
  JSON.parse(
    execFileSync(
      process.execPath,
      ['--import', 'tsx', self, '--model', values.model, '--child', String(replicas), '--share', String(share), '--threads', values.threads],
      { encoding: 'utf8', maxBuffer: 1 << 20 },
    ),
  ) as { rss: number; pss: number };

const rows = ['| shared weights | 1 replica RSS / PSS MB | 2 replicas RSS / PSS MB | second replica adds (PSS) | of the first |', '|---|---:|---:|---:|---:|'];
for (const share of [false, true]) {
  const one = run(1, share);
  const two = run(2, share);
  const added = two.pss - one.pss;
  const row = `| ${share ? 'on' : 'off'} | ${one.rss.toFixed(0)} / ${one.pss.toFixed(0)} | ${two.rss.toFixed(0)} / ${two.pss.toFixed(0)} | ${added.toFixed(0)} MB | ${((100 * added) / one.pss).toFixed(0)} % |`;
  rows.push(row);
  process.stderr.write(`${row}\n`);
}
recordSection(
  `second replica's memory (${values.model})`,
  [
    `Model: ${values.model} (\`${engine}\`) from the real-size pack, Kuma's engine registry in a fresh process per configuration, ${values.threads === '0' ? "the server's default intra-op threads (by cores; shared replicas of speech recognition hold a session per run width, onnx/run-width.ts)" : `${values.threads} intra-op thread(s)`}, warm-up on 10 s, one 10 s job per replica; memory of the whole process (Node's own ≈ 50 MB included).`,
    'Shared weights on: the replicas map one copy of the weights written with external data (src/engines/onnx/shared-weights.ts), pre-packing off. PSS counts a page shared by two mappings once; RSS counts it per mapping.',
  ],
  rows,
  !values['no-write'],
);
