/**
 * The model-only limit of a speech model on this machine: raw onnxruntime-node (ort-worker.ts) with the
 * replicas and intra-op threads the server would give the model, running turns of `seconds` back to back on
 * every replica for `durationS`. What the benchmarks compare Kuma against, measured in the same run.
 *
 * Replicas whose runs adapt their width (src/engines/onnx/run-width.ts) run narrow when all are busy, so
 * their saturated layout is `replicas × the width each then takes`; bestModelOnly also measures one replica
 * with every core and keeps the larger, so that a ratio is against the best this hardware does either way.
 */
import os from 'node:os';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { adaptsRunWidth, defaultIntraOpThreads, defaultReplicas, type EngineType } from '../../src/engines/manifest.js';
import { runWidths, widthFor } from '../../src/engines/onnx/run-width.js';
import { spawnWorker } from '../../src/threads/spawn-worker.js';
import type { OrtWorkerData } from './ort-worker.js';

export interface ModelOnly {
  audioPerSecond: number;
  replicas: number;
  threads: number;
}

export interface ModelOnlyOptions {
  dir: string;
  engine: string;
  /** Audio per run (a turn). */
  seconds: number;
  durationS: number;
  replicas?: number;
  threads?: number;
}

/** Whether the server's replicas of `engine` adapt their width (shared weights on, as by default). */
export function serverAdapts(engine: string, replicas = defaultReplicas(engine as EngineType, os.availableParallelism())): boolean {
  return adaptsRunWidth(engine as EngineType, replicas, true);
}

/** The intra-op threads the server gives each replica of a model of `engine` (its widest, for adaptive replicas). */
export function serverThreads(engine: string, replicas = defaultReplicas(engine as EngineType, os.availableParallelism())): number {
  return (
    Number(process.env.KUMA_ENGINE_INTRA_OP_THREADS) ||
    defaultIntraOpThreads(engine as EngineType, replicas, os.availableParallelism(), serverAdapts(engine, replicas))
  );
}

/** Raw onnxruntime with `replicas` workers; `threads` is each one's widest, and adaptive ones run at their saturated width. */
export async function modelOnlyThroughput(options: ModelOnlyOptions & { adaptive?: boolean }): Promise<ModelOnly> {
  const replicas = options.replicas ?? defaultReplicas(options.engine as EngineType, os.availableParallelism());
  const widest = options.threads ?? serverThreads(options.engine, replicas);
  const adaptive = options.adaptive ?? serverAdapts(options.engine, replicas);
  const threads = adaptive ? widthFor(runWidths(widest), widest, replicas) : widest;
  const data: OrtWorkerData = {
    file: path.join(options.dir, 'model.onnx'),
    intraOpThreads: threads,
    allowSpinning: false,
    layout: options.engine === 'ctc-nemo' ? 'nemo' : 'wav2vec2',
  };
  const workers = await Promise.all(
    Array.from({ length: replicas }, async () => {
      const worker = spawnWorker(new URL('./ort-worker.ts', import.meta.url), { workerData: data });
      await new Promise((resolve, reject) => (worker.once('message', resolve), worker.once('error', reject)));
      return worker;
    }),
  );
  const run = (worker: Worker) =>
    new Promise<void>((resolve) => {
      worker.once('message', () => resolve());
      worker.postMessage({ id: 0, seconds: options.seconds });
    });
  for (const w of workers) await run(w); // warm
  let audio = 0;
  const t0 = performance.now();
  const until = t0 + options.durationS * 1000;
  await Promise.all(
    workers.map(async (w) => {
      while (performance.now() < until) {
        await run(w);
        audio += options.seconds;
      }
    }),
  );
  const audioPerSecond = audio / ((performance.now() - t0) / 1000);
  await Promise.all(workers.map((w) => w.terminate()));
  return { audioPerSecond, replicas, threads };
}

/** The larger of the given layout's limit and one replica with every core's (see the header). */
export async function bestModelOnly(options: ModelOnlyOptions): Promise<ModelOnly> {
  const layout = await modelOnlyThroughput(options);
  const cores = os.availableParallelism();
  if (layout.replicas === 1 && layout.threads === cores) return layout;
  const wide = await modelOnlyThroughput({ ...options, replicas: 1, threads: cores, adaptive: false });
  return wide.audioPerSecond > layout.audioPerSecond ? wide : layout;
}
