/**
 * The main thread's handle on one served model: jobs run on the replicas of a ReplicaPool (admission
 * control, a wait queue fair across accounts with first jobs ahead of continuations, crash replacement),
 * one-shot (`run`) or streamed (`stream`, credit-based flow control), cancelled by AbortSignal. Each call
 * says whose job it is and its priority (`JobOptions`). A streamed job may also take its input as a stream (a long upload
 * decoded window by window): the input is pulled from the caller's iterable only as fast as the worker's
 * runner takes it (input credit), and an input that fails fails the job with the input's error.
 *
 * Invariant: every call settles, and a replica is released only once its worker has sent the job's last
 * message (result / end / cancelled / error) or died — whatever the interleaving of the consumer leaving,
 * the signal aborting, the worker finishing and the worker crashing. A worker that does not confirm a
 * cancel within CANCEL_GRACE_MS is killed (and replaced) rather than left holding the replica.
 */
import type { ModelEntry } from '../manifest.js';
import { EngineCancelledError, EngineFailedError, type EngineOverloadedError } from '../errors.js';
import { INPUT_CREDIT, transferables, type WorkerToMain } from './protocol.js';
import { ReplicaPool, type EngineThreads, type JobOptions, type Replica } from './replica-pool.js';
import { AsyncQueue } from '../../primitives/async-queue.js';

export type { EngineThreads, JobOptions } from './replica-pool.js';

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

  /** Replicas this model runs (the manifest's, else a default by cores). */
  get replicas(): number {
    return this.pool.replicaCount;
  }

  stats(): { replicas: number; lanes: number; busy: number; queued: number } {
    return this.pool.stats();
  }

  /** The EngineOverloadedError a job started now would get (no free replica, queue full), or null. */
  refusal(): EngineOverloadedError | null {
    return this.pool.refusal();
  }

  /** Spawns the replicas and resolves once every one has loaded and warmed its model. */
  start(): Promise<void> {
    return this.pool.start();
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  async run<T>(method: string, input: unknown, signal?: AbortSignal, options?: JobOptions): Promise<T> {
    const replica = await this.pool.acquire(signal, options);
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

  /**
   * Streams a job's chunks. Leaving the loop early (or aborting) cancels the job in the worker. With
   * `streamedInput`, the runner reads those items as `ctx.input`; the iterable is read at the runner's
   * pace and closed (`return()`) when the job ends, or at once when the job is refused; if it throws, the
   * job is cancelled and this throws that error.
   */
  async *stream<T>(method: string, input: unknown, signal?: AbortSignal, streamedInput?: AsyncIterable<unknown>, options?: JobOptions): AsyncGenerator<T> {
    let replica: Replica;
    try {
      replica = await this.pool.acquire(signal, options);
    } catch (err) {
      if (streamedInput) closeQuietly(streamedInput[Symbol.asyncIterator]()); // refused: the input is not wanted
      throw err;
    }
    const job = this.open(replica);
    const started = Date.now();
    const onAbort = () => job.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    let feeder: Feeder | null = null;
    try {
      this.pool.post(replica, { type: 'job', id: job.id, method, input, credit: STREAM_CREDIT, ...(streamedInput ? { streamedInput: true } : {}) });
      if (streamedInput) feeder = this.feed(replica, job, streamedInput);
      while (true) {
        const m = await job.next();
        if (m.type === 'end') return;
        if (m.type !== 'chunk') throw feeder?.error ?? this.toError(m);
        this.pool.post(replica, { type: 'credit', id: job.id, amount: 1 });
        yield m.value as T;
      }
    } finally {
      feeder?.stop();
      signal?.removeEventListener('abort', onAbort);
      await job.close();
      this.pool.release(replica, Date.now() - started);
    }
  }

  /** Pumps `source` into the job as `input` messages, at most INPUT_CREDIT ahead of the runner. */
  private feed(replica: Replica, job: JobHandle, source: AsyncIterable<unknown>): Feeder {
    const iterator = source[Symbol.asyncIterator]();
    let credit = INPUT_CREDIT;
    let stopped = false;
    let wake: (() => void) | null = null;
    const feeder: Feeder = {
      error: null,
      stop() {
        if (stopped) return;
        stopped = true;
        wake?.();
        closeQuietly(iterator);
      },
    };
    job.onInputCredit = (amount) => {
      credit += amount;
      wake?.();
    };
    void (async () => {
      try {
        for (;;) {
          while (credit <= 0 && !stopped) await new Promise<void>((resolve) => (wake = resolve));
          if (stopped) return;
          const step = await iterator.next();
          if (stopped) return;
          if (step.done) return this.pool.post(replica, { type: 'input_end', id: job.id });
          credit--;
          this.pool.post(replica, { type: 'input', id: job.id, value: step.value }, transferables(step.value));
        }
      } catch (err) {
        if (stopped) return;
        feeder.error = err instanceof Error ? err : new Error(String(err));
        job.cancel();
      }
    })();
    return feeder;
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
  private open(replica: Replica): JobHandle {
    const id = this.nextJobId++;
    // The job's messages, in order; a crash ends them with its error after those already here.
    const messages = new AsyncQueue<WorkerToMain>();
    let workerDone = false;
    let cancelled = false;
    let killTimer: NodeJS.Timeout | null = null;
    let markDone!: () => void;
    const done = new Promise<void>((resolve) => (markDone = resolve));
    const settle = () => {
      workerDone = true;
      if (killTimer) clearTimeout(killTimer);
      markDone();
    };
    const cancel = () => {
      if (workerDone || cancelled) return;
      cancelled = true;
      this.pool.post(replica, { type: 'cancel', id });
      // A worker that never confirms (stuck in native code) is killed; its exit settles the job as a crash.
      killTimer = setTimeout(() => this.pool.kill(replica), this.cancelGraceMs);
    };
    const handle: JobHandle = {
      id,
      onInputCredit: null,
      cancel,
      next: async (): Promise<WorkerToMain> => {
        const step = await messages.next();
        // Only a crash ends the messages, and it ends them with its error: never done.
        if (step.done) throw new EngineFailedError(this.entry.id, 'the job ended without a last message');
        return step.value;
      },
      close: async (): Promise<void> => {
        if (!workerDone) {
          cancel();
          await done;
        }
        replica.jobs.delete(id);
      },
    };
    replica.jobs.set(id, {
      onMessage: (m) => {
        // Input credit is flow control for the feeder, not a message of the job's output.
        if (m.type === 'input_credit') return handle.onInputCredit?.(m.amount);
        if (isLast(m)) settle();
        messages.push(m);
      },
      onCrash: (err) => {
        settle();
        messages.end(err);
      },
    });
    return handle;
  }
}

/** Ends an input iterator without waiting: a source stuck in next() must not hold the job's cleanup. */
function closeQuietly(iterator: AsyncIterator<unknown>): void {
  void Promise.resolve(iterator.return?.()).catch(() => {});
}

/** One job's view of its replica's messages (see open()). */
interface JobHandle {
  id: number;
  /** Set by feed(): the worker's runner took inputs. */
  onInputCredit: ((amount: number) => void) | null;
  cancel(): void;
  next(): Promise<WorkerToMain>;
  close(): Promise<void>;
}

interface Feeder {
  /** What the input source threw, if it did. */
  error: Error | null;
  stop(): void;
}
