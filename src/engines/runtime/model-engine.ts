/**
 * The main thread's handle on one served model: jobs run on the replicas of a ReplicaPool (admission
 * control, FIFO queue, crash replacement), one-shot (`run`) or streamed (`stream`, credit-based flow
 * control), cancelled by AbortSignal.
 *
 * Invariant: every call settles, and a replica is released only once its worker has sent the job's last
 * message (result / end / cancelled / error) or died — whatever the interleaving of the consumer leaving,
 * the signal aborting, the worker finishing and the worker crashing. A worker that does not confirm a
 * cancel within CANCEL_GRACE_MS is killed (and replaced) rather than left holding the replica.
 */
import type { ModelEntry } from '../manifest.js';
import { EngineCancelledError, EngineFailedError } from '../errors.js';
import type { WorkerToMain } from './protocol.js';
import { ReplicaPool, type EngineThreads, type Replica } from './replica-pool.js';

export type { EngineThreads } from './replica-pool.js';

/** Chunks a streaming job may have in flight toward the main thread. */
const STREAM_CREDIT = 4;
/** How long a worker may take to confirm a cancel (a runner sees it at its next checkpoint). */
export const CANCEL_GRACE_MS = 30_000;

const isLast = (m: WorkerToMain) => m.type === 'end' || m.type === 'result' || m.type === 'cancelled' || m.type === 'error';

export class ModelEngine {
  private readonly pool: ReplicaPool;
  private nextJobId = 1;

  constructor(
    readonly entry: ModelEntry & { absoluteDir: string },
    threads: EngineThreads,
    private readonly cancelGraceMs = CANCEL_GRACE_MS,
  ) {
    this.pool = new ReplicaPool(entry, threads);
  }

  get ready(): boolean {
    return this.pool.ready;
  }

  get info(): Record<string, unknown> {
    return this.pool.info;
  }

  stats(): { replicas: number; busy: number; queued: number } {
    return this.pool.stats();
  }

  /** Spawns the replicas and resolves once every one has loaded and warmed its model. */
  start(): Promise<void> {
    return this.pool.start();
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  async run<T>(method: string, input: unknown, signal?: AbortSignal): Promise<T> {
    const replica = await this.pool.acquire(signal);
    const job = this.open(replica);
    const started = Date.now();
    const onAbort = () => job.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      this.pool.post(replica, { type: 'job', id: job.id, method, input, credit: 0 });
      const m = await job.next();
      if (m.type === 'result') return m.value as T;
      throw this.toError(m);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      await job.close();
      this.pool.release(replica, Date.now() - started);
    }
  }

  /** Streams a job's chunks. Leaving the loop early (or aborting) cancels the job in the worker. */
  async *stream<T>(method: string, input: unknown, signal?: AbortSignal): AsyncGenerator<T> {
    const replica = await this.pool.acquire(signal);
    const job = this.open(replica);
    const started = Date.now();
    const onAbort = () => job.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      this.pool.post(replica, { type: 'job', id: job.id, method, input, credit: STREAM_CREDIT });
      while (true) {
        const m = await job.next();
        if (m.type === 'end') return;
        if (m.type !== 'chunk') throw this.toError(m);
        this.pool.post(replica, { type: 'credit', id: job.id, amount: 1 });
        yield m.value as T;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      await job.close();
      this.pool.release(replica, Date.now() - started);
    }
  }

  private toError(m: WorkerToMain): Error {
    if (m.type === 'error') return new EngineFailedError(this.entry.id, m.message);
    if (m.type === 'cancelled') return new EngineCancelledError();
    return new EngineFailedError(this.entry.id, `unexpected worker message ${m.type}`);
  }

  /**
   * One job's view of its replica's messages. `next()` yields them in order (a crash rejects it);
   * `close()` makes sure the worker is done with the job: at once when its last message has already
   * arrived (consumed or not), else by cancelling and waiting for the confirmation, or the worker's end.
   */
  private open(replica: Replica) {
    const id = this.nextJobId++;
    const queue: WorkerToMain[] = [];
    let crash: Error | null = null;
    let workerDone = false;
    let cancelled = false;
    let wake: (() => void) | null = null;
    let killTimer: NodeJS.Timeout | null = null;
    const settle = () => {
      workerDone = true;
      if (killTimer) clearTimeout(killTimer);
    };
    const notify = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    replica.jobs.set(id, {
      onMessage: (m) => {
        if (isLast(m)) settle();
        queue.push(m);
        notify();
      },
      onCrash: (err) => {
        crash = err;
        settle();
        notify();
      },
    });
    const cancel = () => {
      if (workerDone || cancelled) return notify();
      cancelled = true;
      this.pool.post(replica, { type: 'cancel', id });
      // A worker that never confirms (stuck in native code) is killed; its exit settles the job as a crash.
      killTimer = setTimeout(() => this.pool.kill(replica), this.cancelGraceMs);
      notify();
    };
    return {
      id,
      cancel,
      next: async (): Promise<WorkerToMain> => {
        while (true) {
          const m = queue.shift();
          if (m) return m;
          if (crash) throw crash;
          await new Promise<void>((resolve) => (wake = resolve));
        }
      },
      close: async (): Promise<void> => {
        if (!workerDone) {
          cancel();
          while (!workerDone) await new Promise<void>((resolve) => (wake = resolve));
        }
        replica.jobs.delete(id);
      },
    };
  }
}
