/**
 * `npm run bench:threads -- [--model DIR] [--seconds 12]`: how to spend this machine's cores on one speech
 * model, measured on raw onnxruntime-node (the model alone) at real size: replicas (worker threads, each a
 * session and a copy of the weights) × intra-op threads, with the thread pool's spinning on or off.
 *
 * - lone chunk: the latency of one 3.5 s job (a realtime chunk: 1 s context, 2 s new audio, 0.5 s lookahead)
 *   on an idle model — what a lone caller's final waits for;
 * - lone + busy: the same job while another replica is busy with 3 s jobs (the chunk's own replica free);
 * - saturated: audio seconds per second with every replica kept busy by 3 s jobs — the capacity;
 * - spin CPU: the process's CPU while the lone job runs over its wall time (cores burnt per busy core).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Worker } from 'node:worker_threads';
import { defaultPackDir } from '../../models/real-size/generate.js';
import { spawnWorker } from '../../src/threads/spawn-worker.js';
import { percentile, recordSection } from '../results.js';
import type { OrtWorkerData } from './ort-worker.js';

const { values } = parseArgs({
  options: { model: { type: 'string' }, seconds: { type: 'string', default: '12' }, 'no-write': { type: 'boolean', default: false } },
});
const dir = values.model ?? path.join(defaultPackDir(), 'wav2vec2-base');
const file = path.join(dir, 'model.onnx');
if (!fs.existsSync(file)) throw new Error(`${file} is missing: run npm run models:real-size first`);
const SATURATE_S = Number(values.seconds);
const cores = os.availableParallelism();

interface Config {
  replicas: number;
  threads: number;
  spin: boolean;
}
const configs: Config[] = [
  { replicas: cores, threads: 1, spin: false },
  { replicas: 1, threads: cores, spin: true },
  { replicas: 1, threads: cores, spin: false },
  { replicas: cores, threads: cores, spin: false },
];

class Replica {
  private next = 1;
  private readonly waiting = new Map<number, (ms: number) => void>();
  constructor(readonly worker: Worker) {
    worker.on('message', (m: { id?: number; ms?: number }) => {
      if (m.id !== undefined) this.waiting.get(m.id)?.(m.ms!);
    });
  }
  static async start(data: OrtWorkerData): Promise<Replica> {
    const worker = spawnWorker(new URL('./ort-worker.ts', import.meta.url), { workerData: data });
    await new Promise((resolve, reject) => (worker.once('message', resolve), worker.once('error', reject)));
    return new Replica(worker);
  }
  job(seconds: number): Promise<number> {
    const id = this.next++;
    const done = new Promise<number>((resolve) => this.waiting.set(id, (ms) => (this.waiting.delete(id), resolve(ms))));
    this.worker.postMessage({ id, seconds });
    return done;
  }
}

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function measure(config: Config) {
  const replicas = await Promise.all(
    Array.from({ length: config.replicas }, () => Replica.start({ file, intraOpThreads: config.threads, allowSpinning: config.spin, layout: 'wav2vec2' })),
  );
  for (const r of replicas) for (let i = 0; i < 2; i++) await r.job(3.5); // warm the arenas
  const lone: number[] = [];
  let spinCpu = 0;
  let spinWall = 0;
  for (let i = 0; i < 7; i++) {
    const c0 = cpu();
    const t0 = performance.now();
    lone.push(await replicas[0]!.job(3.5));
    spinCpu += cpu() - c0;
    spinWall += (performance.now() - t0) / 1000;
  }
  const loneBusy: number[] = [];
  if (replicas.length > 1) {
    let stop = false;
    const background = (async () => {
      while (!stop) await replicas[1]!.job(3);
    })();
    for (let i = 0; i < 5; i++) loneBusy.push(await replicas[0]!.job(3.5));
    stop = true;
    await background;
  }
  let audio = 0;
  const until = performance.now() + SATURATE_S * 1000;
  const t0 = performance.now();
  await Promise.all(
    replicas.map(async (r) => {
      while (performance.now() < until) {
        await r.job(3);
        audio += 3;
      }
    }),
  );
  const throughput = audio / ((performance.now() - t0) / 1000);
  await Promise.all(replicas.map((r) => r.worker.terminate()));
  return { lone: percentile(lone, 50), loneBusy: loneBusy.length ? percentile(loneBusy, 50) : NaN, throughput, spin: spinCpu / spinWall };
}

const rows = [
  '| replicas × intra-op threads | spinning | lone chunk p50 ms | lone chunk, other replica busy, p50 ms | saturated audio-s/s | CPU while the lone chunk runs (cores) |',
  '|---|---|---:|---:|---:|---:|',
];
for (const config of configs) {
  const r = await measure(config);
  const row = `| ${config.replicas} × ${config.threads} | ${config.spin ? 'on' : 'off'} | ${r.lone.toFixed(0)} | ${Number.isFinite(r.loneBusy) ? r.loneBusy.toFixed(0) : '—'} | ${r.throughput.toFixed(2)} | ${r.spin.toFixed(2)} |`;
  rows.push(row);
  console.log(row);
}
recordSection(
  'threads',
  [
    `Model: ${path.basename(dir)} from the real-size pack (random weights, real architecture), raw onnxruntime-node in worker threads (load-tests/real-size/ort-worker.ts), fp32, graph optimisation all.`,
    `Chunk = 3.5 s of 16 kHz audio in one run; saturated = every replica kept busy with 3 s runs for ${SATURATE_S} s.`,
  ],
  rows,
  !values['no-write'],
);
process.exit(0);
