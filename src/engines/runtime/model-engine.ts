/**
 * The main thread's handle on one served model: a few worker replicas (each runs one job at a time), a
 * bounded wait queue in front of them with admission control (a full queue refuses at once with a
 * Retry-After estimate instead of letting requests pile up), cancellation by AbortSignal, and streaming
 * results pulled with credit-based flow control.
 */
import type { Worker } from 'node:worker_threads';
import type { ModelEntry } from '../manifest.js';
import { EngineCancelledError, EngineFailedError, EngineNotReadyError, EngineOverloadedError } from '../errors.js';
import { spawnWorker } from '../../threads/spawn-worker.js';
import type { MainToWorker, WorkerInit, WorkerToMain } from './protocol.js';

const WORKER_URL = new URL(`./model-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
/** Chunks a streaming job may have in flight toward the main thread. */
const STREAM_CREDIT = 4;

interface JobHandlers {
  onMessage(message: WorkerToMain): void;
  onCrash(err: Error): void;
}

interface Replica {
  worker: Worker;
  busy: boolean;
  jobs: Map<number, JobHandlers>;
}

export interface EngineThreads {
  intraOpThreads: number;
  interOpThreads: number;
  /** Niceness of model threads (default 10): below the main thread, which must stay responsive. */
  niceness?: number;
}

export class ModelEngine {
  private readonly replicas: Replica[] = [];
  private readonly waiters: Array<{ resolve: (r: Replica) => void; reject: (e: Error) => void }> = [];
  private nextJobId = 1;
  private isReady = false;
  private closed = false;
  /** Moving average of job duration, for Retry-After estimates. */
  private avgJobMs = 1000;
  info: Record<string, unknown> = {};

  constructor(
    readonly entry: ModelEntry & { absoluteDir: string },
    private readonly threads: EngineThreads,
  ) {}

  get ready(): boolean {
    return this.isReady;
  }

  stats(): { replicas: number; busy: number; queued: number } {
    return { replicas: this.replicas.length, busy: this.replicas.filter((r) => r.busy).length, queued: this.waiters.length };
  }

  /** Spawns the replicas and resolves once every one has loaded and warmed its model. */
  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.entry.replicas }, () => this.spawnReplica()));
    this.isReady = true;
  }

  async run<T>(method: string, input: unknown, signal?: AbortSignal): Promise<T> {
    const replica = await this.acquire(signal);
    const started = Date.now();
    try {
      return await new Promise<T>((resolve, reject) => {
        const id = this.nextJobId++;
        const onAbort = () => this.post(replica, { type: 'cancel', id });
        signal?.addEventListener('abort', onAbort, { once: true });
        const done = () => {
          signal?.removeEventListener('abort', onAbort);
          replica.jobs.delete(id);
        };
        replica.jobs.set(id, {
          onMessage: (m) => {
            if (m.type === 'result') (done(), resolve(m.value as T));
            else if (m.type === 'cancelled') (done(), reject(new EngineCancelledError()));
            else if (m.type === 'error') (done(), reject(new EngineFailedError(this.entry.id, m.message)));
          },
          onCrash: (err) => (done(), reject(err)),
        });
        this.post(replica, { type: 'job', id, method, input, credit: 0 });
      });
    } finally {
      this.release(replica, Date.now() - started);
    }
  }

  /** Streams a job's chunks. Leaving the loop early (or aborting) cancels the job in the worker. */
  async *stream<T>(method: string, input: unknown, signal?: AbortSignal): AsyncGenerator<T> {
    const replica = await this.acquire(signal);
    const started = Date.now();
    const id = this.nextJobId++;
    const queue: WorkerToMain[] = [];
    let wake: (() => void) | null = null;
    let crash: Error | null = null;
    let finished = false;
    const notify = () => (wake?.(), (wake = null));
    replica.jobs.set(id, { onMessage: (m) => (queue.push(m), notify()), onCrash: (err) => ((crash = err), notify()) });
    const onAbort = () => (this.post(replica, { type: 'cancel', id }), notify());
    signal?.addEventListener('abort', onAbort, { once: true });
    this.post(replica, { type: 'job', id, method, input, credit: STREAM_CREDIT });
    try {
      while (true) {
        if (crash) throw crash;
        const m = queue.shift();
        if (!m) {
          if (signal?.aborted) throw new EngineCancelledError();
          await new Promise<void>((resolve) => (wake = resolve));
          continue;
        }
        if (m.type === 'chunk') {
          this.post(replica, { type: 'credit', id, amount: 1 });
          yield m.value as T;
        } else if (m.type === 'end') {
          finished = true;
          return;
        } else if (m.type === 'cancelled') {
          finished = true;
          throw new EngineCancelledError();
        } else if (m.type === 'error') {
          finished = true;
          throw new EngineFailedError(this.entry.id, m.message);
        }
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (!finished && !crash) {
        // The consumer left early: cancel in the worker and wait for it to stop before the replica is reused.
        await new Promise<void>((resolve) => {
          replica.jobs.set(id, { onMessage: (m) => (m.type === 'cancelled' || m.type === 'end' || m.type === 'error' ? resolve() : undefined), onCrash: () => resolve() });
          this.post(replica, { type: 'cancel', id });
        });
      }
      replica.jobs.delete(id);
      this.release(replica, Date.now() - started);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) waiter.reject(new EngineNotReadyError(this.entry.id));
    await Promise.all(this.replicas.map((r) => r.worker.terminate()));
  }

  private acquire(signal?: AbortSignal): Promise<Replica> {
    if (!this.isReady || this.closed) return Promise.reject(new EngineNotReadyError(this.entry.id));
    if (signal?.aborted) return Promise.reject(new EngineCancelledError());
    const free = this.replicas.find((r) => !r.busy);
    if (free) {
      free.busy = true;
      return Promise.resolve(free);
    }
    if (this.waiters.length >= this.entry.maxQueue) {
      const seconds = Math.max(1, Math.ceil(((this.waiters.length + 1) * this.avgJobMs) / this.replicas.length / 1000));
      return Promise.reject(new EngineOverloadedError(this.entry.id, seconds));
    }
    return new Promise<Replica>((resolve, reject) => {
      const waiter = { resolve, reject };
      this.waiters.push(waiter);
      signal?.addEventListener(
        'abort',
        () => {
          const index = this.waiters.indexOf(waiter);
          if (index >= 0) this.waiters.splice(index, 1);
          reject(new EngineCancelledError());
        },
        { once: true },
      );
    });
  }

  private release(replica: Replica, jobMs: number): void {
    this.avgJobMs = this.avgJobMs * 0.8 + jobMs * 0.2;
    const next = this.waiters.shift();
    if (next && this.replicas.includes(replica)) next.resolve(replica);
    else replica.busy = false;
  }

  private post(replica: Replica, message: MainToWorker): void {
    replica.worker.postMessage(message);
  }

  private spawnReplica(): Promise<void> {
    const init: WorkerInit = { entry: this.entry, dir: this.entry.absoluteDir, intraOpThreads: this.threads.intraOpThreads, interOpThreads: this.threads.interOpThreads, niceness: this.threads.niceness ?? 10 };
    const worker = spawnWorker(WORKER_URL, { workerData: init });
    const replica: Replica = { worker, busy: false, jobs: new Map() };
    return new Promise<void>((resolve, reject) => {
      let loaded = false;
      worker.on('message', (m: WorkerToMain) => {
        if (m.type === 'ready') {
          loaded = true;
          this.info = m.info;
          this.replicas.push(replica);
          // A replacement for a crashed replica takes over whoever is waiting.
          const waiter = this.isReady ? this.waiters.shift() : undefined;
          if (waiter) {
            replica.busy = true;
            waiter.resolve(replica);
          }
          resolve();
        } else if (m.type === 'load_failed') {
          reject(new Error(`Model ${this.entry.id} (${this.entry.engine}, ${this.entry.absoluteDir}) failed to load: ${m.message}`));
          void worker.terminate();
        } else if ('id' in m) {
          replica.jobs.get(m.id)?.onMessage(m);
        }
      });
      worker.on('error', (err) => {
        if (!loaded) reject(err);
      });
      worker.on('exit', (code) => {
        const index = this.replicas.indexOf(replica);
        if (index >= 0) this.replicas.splice(index, 1);
        const err = new EngineFailedError(this.entry.id, `worker exited with code ${code}`);
        for (const job of replica.jobs.values()) job.onCrash(err);
        replica.jobs.clear();
        if (!loaded) reject(err);
        // A replica that dies while serving is replaced, so capacity recovers.
        else if (!this.closed) void this.spawnReplica().catch(() => {});
      });
    });
  }
}
