/**
 * The worker replicas of one model and the bounded wait queue in front of them. A job acquires a place on
 * a replica (at once when one has room, else in the wait queue's order — first jobs of requests before
 * continuations, round-robin across accounts, see fair-queue.ts — else, when the queue is full, an
 * EngineOverloadedError with a Retry-After estimate) and releases it when the worker has finished with the
 * job. A replica whose worker dies is replaced; its replacement takes over the queue, and if no replacement
 * can be started the queued jobs fail instead of waiting forever.
 *
 * Admission: `maxQueue` bounds the opening jobs waiting (new requests). A continuation (the next phrase of
 * a speech request already answering) is never refused: its request was admitted and is paid for, and
 * there is at most one per such request, so refusing it would only cut a response midway.
 *
 * A replica runs `jobsPerReplica` jobs at once (manifest; 1 by default, 4 for speech recognition): its
 * worker interleaves them between model steps. For ASR this is what keeps a two-hour upload, which holds
 * its job for as long as the audio takes to decode and transcribe, from making everyone else wait that
 * long: a short request gets turns between the long one's chunks. A continuation (a realtime turn's
 * mid-turn chunk) joins only an idle replica: inside a worker jobs take turns in arrival order, so a chunk
 * sent to a busy worker would run ahead of a final that came after it (XLS-R-300M, one replica: a caller
 * who stopped speaking waited for up to three other callers' mid-turn chunks); kept in the wait queue, it
 * lets finals pass.
 */
import type { Worker } from 'node:worker_threads';
import { adaptsRunWidth, defaultIntraOpThreads, defaultNiceness, defaultReplicas, SHARED_ENGINES, type ModelEntry } from '../manifest.js';
import { clearSlot, createRunSlots, RUN_GATE_SLOTS } from '../onnx/run-width.js';
import { EngineCancelledError, EngineFailedError, EngineNotReadyError, EngineOverloadedError } from '../errors.js';
import { spawnWorker } from '../../threads/spawn-worker.js';
import type { MainToWorker, WorkerInit, WorkerToMain } from './protocol.js';
import { FairQueue, type JobPriority } from './fair-queue.js';

const WORKER_URL = new URL(`./model-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
/** Delay before retrying a replacement replica that failed to load, doubling up to the maximum. */
const RESPAWN_DELAY_MS = 500;
const RESPAWN_DELAY_MAX_MS = 30_000;
/** One count of the big models' runs for the whole process, a slot per worker: replicas choose their widths by it. */
const RUN_SLOTS = createRunSlots();
const freeRunSlots = Array.from({ length: RUN_GATE_SLOTS }, (_, i) => RUN_GATE_SLOTS - 1 - i);

export interface JobHandlers {
  onMessage(message: WorkerToMain): void;
  onCrash(err: Error): void;
}

export interface Replica {
  worker: Worker;
  /** Jobs acquired on this replica and not yet released. */
  active: number;
  jobs: Map<number, JobHandlers>;
  /** The first replica, where a lone job goes (ties go to the first); its replacement is the lead too. */
  lead: boolean;
}

/**
 * Jobs a replica takes at once, by engine, where more than one: speech recognition's jobs interleave
 * (chunked work, checkpoints between chunks); translation's concurrent jobs (up to 16) are batched into
 * shared generations (mt/nllb-batcher.ts).
 */
const JOBS_PER_REPLICA: Record<string, number> = { 'ctc-wav2vec2': 4, 'ctc-nemo': 4, whisper: 4, nllb: 16 };

/** Who a job is for and how urgent it is; the wait queue orders by these (fair-queue.ts). */
export interface JobOptions {
  /** The account the job is for (jobs without one share one anonymous account). */
  account?: string;
  /** `opening` (default): the first job of a request; `continuation`: a later phrase of one under way. */
  priority?: JobPriority;
  /**
   * The job is worth nothing after this many ms (a realtime item's deadline): when the queue ahead of it is
   * expected to take longer, it is refused at once (EngineOverloadedError) rather than queued to time out —
   * so the queue holds what can still be served, and the turns it holds complete.
   */
  deadlineMs?: number;
}

/** Jobs a replica of this model runs at once. */
export function jobsPerReplica(entry: ModelEntry): number {
  return entry.jobsPerReplica ?? JOBS_PER_REPLICA[entry.engine] ?? 1;
}

export interface EngineThreads {
  /** 0: by cores (manifest.ts defaultIntraOpThreads). */
  intraOpThreads: number;
  interOpThreads: number;
  /** Niceness of model threads (default 10): below the main thread, which must stay responsive. */
  niceness?: number;
  /** Cap on the replicas of a model whose manifest entry does not set them (manifest.ts defaultReplicas). */
  maxAutoReplicas?: number;
  /** onnxruntime execution providers of every session, checked at start (onnx/execution-providers.ts); empty = the CPU. */
  executionProviders?: readonly string[];
  /** Where replicas of a large model keep the one copy of its weights they all map (null: each loads its own). */
  sharedWeights?: { cacheDir: string; minBytes: number } | null;
}

interface Waiter {
  grant(replica: Replica): void;
  fail(err: Error): void;
}

export class ReplicaPool {
  private readonly replicas: Replica[] = [];
  private readonly waiters = new FairQueue<Waiter>();
  private isReady = false;
  private closed = false;
  /** Set while no replacement could be started and none is running: new jobs fail at once. */
  private replacementFailed = false;
  private respawnDelayMs = RESPAWN_DELAY_MS;
  private respawnTimer: NodeJS.Timeout | null = null;
  /** Moving average of job duration, for Retry-After estimates. */
  private avgJobMs = 1000;
  private readonly perReplica: number;
  /** Replicas this pool runs: the manifest's, else a default by cores. */
  readonly replicaCount: number;
  /** Whether this model's runs adapt their width to the load (manifest.ts adaptsRunWidth, run-width.ts). */
  readonly adaptive: boolean;
  info: Record<string, unknown> = {};

  constructor(
    readonly entry: ModelEntry & { absoluteDir: string },
    private readonly threads: EngineThreads,
  ) {
    this.perReplica = jobsPerReplica(entry);
    const shares = Boolean(threads.sharedWeights);
    this.replicaCount = entry.replicas ?? defaultReplicas(entry.engine, undefined, threads.maxAutoReplicas, shares);
    this.adaptive = adaptsRunWidth(entry.engine, this.replicaCount, shares);
  }

  get ready(): boolean {
    return this.isReady;
  }

  /**
   * `lanes`: jobs the model runs side by side, each at full speed — its replicas, or 1 when their runs adapt
   * their width (a lone run takes every core; a second one takes cores from it). Below it, the model is idle
   * enough for work that can wait (realtime interims).
   */
  stats(): { replicas: number; lanes: number; busy: number; queued: number } {
    const replicas = this.replicas.length;
    return {
      replicas,
      lanes: this.adaptive ? Math.min(1, replicas) : replicas,
      busy: this.replicas.reduce((n, r) => n + r.active, 0),
      queued: this.waiters.length,
    };
  }

  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.replicaCount }, (_, index) => this.spawnReplica(index === 0)));
    this.isReady = true;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.respawnTimer) clearTimeout(this.respawnTimer);
    for (const waiter of this.waiters.drain()) waiter.fail(new EngineNotReadyError(this.entry.id));
    await Promise.all(this.replicas.map((r) => r.worker.terminate()));
  }

  acquire(signal?: AbortSignal, options: JobOptions = {}): Promise<Replica> {
    if (!this.isReady || this.closed) return Promise.reject(new EngineNotReadyError(this.entry.id));
    if (signal?.aborted) return Promise.reject(new EngineCancelledError());
    if (this.replacementFailed && this.replicas.length === 0) {
      return Promise.reject(new EngineFailedError(this.entry.id, 'no replica of the model could be restarted'));
    }
    const priority = options.priority ?? 'opening';
    const free = priority === 'continuation' ? this.idle() : this.roomiest();
    if (free) {
      free.active++;
      return Promise.resolve(free);
    }
    const refusal = priority === 'opening' ? this.refusal() : null;
    if (refusal) return Promise.reject(refusal);
    if (options.deadlineMs !== undefined && this.expectedWaitMs(priority) > options.deadlineMs) {
      return Promise.reject(new EngineOverloadedError(this.entry.id, Math.max(1, Math.ceil(this.expectedWaitMs(priority) / 1000))));
    }
    return new Promise<Replica>((resolve, reject) => {
      // The abort listener is removed however the wait ends: sessions keep one signal for hours.
      const onAbort = () => {
        this.waiters.remove(waiter);
        reject(new EngineCancelledError());
      };
      const waiter: Waiter = {
        grant: (replica) => (signal?.removeEventListener('abort', onAbort), resolve(replica)),
        fail: (err) => (signal?.removeEventListener('abort', onAbort), reject(err)),
      };
      this.waiters.push(waiter, { account: options.account ?? '', priority });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * The error a job would get if it asked for a replica now because every replica is busy and the queue
   * is full, with a Retry-After estimate; null when it would be served or queued.
   */
  refusal(): EngineOverloadedError | null {
    if (this.roomiest() || this.waiters.openings < this.entry.maxQueue) return null;
    const places = Math.max(1, this.replicas.length * this.perReplica);
    const seconds = Math.max(1, Math.ceil(((this.waiters.length + 1) * this.avgJobMs) / places / 1000));
    return new EngineOverloadedError(this.entry.id, seconds);
  }

  /** How long a job queued now would wait: the jobs ahead of it (openings go before continuations) over the places. */
  private expectedWaitMs(priority: JobPriority): number {
    const ahead = priority === 'opening' ? this.waiters.openings : this.waiters.length;
    return ((ahead + 1) * this.avgJobMs) / Math.max(1, this.replicas.length * this.perReplica);
  }

  /** A replica with no job (where a continuation may go). */
  private idle(): Replica | undefined {
    return this.replicas.find((r) => r.active === 0);
  }

  /** Hands free places of `replica` to waiters: openings while it has room, a continuation only when it is idle. */
  private fill(replica: Replica): void {
    while (replica.active < this.perReplica && this.waiters.length) {
      const next = replica.active === 0 ? this.waiters.shift() : this.waiters.shiftOpening();
      if (!next) return;
      replica.active++;
      next.grant(replica);
    }
  }

  /** The replica with the fewest jobs, if it has room for one more. */
  private roomiest(): Replica | undefined {
    const least = this.replicas.reduce<Replica | undefined>((best, r) => (!best || r.active < best.active ? r : best), undefined);
    return least && least.active < this.perReplica ? least : undefined;
  }

  /** Hands the job's place to the next waiter, or frees it. Call only once the worker is done with the job. */
  release(replica: Replica, jobMs: number): void {
    this.avgJobMs = this.avgJobMs * 0.8 + jobMs * 0.2;
    // A crashed replica is gone: the queue waits for its replacement (spawnReplica hands it over).
    if (!this.replicas.includes(replica)) return;
    replica.active--;
    this.fill(replica);
  }

  post(replica: Replica, message: MainToWorker, transfer: ArrayBuffer[] = []): void {
    replica.worker.postMessage(message, transfer);
  }

  /** Kills a replica whose worker stopped answering; the exit handler fails its jobs and replaces it. */
  kill(replica: Replica): void {
    void replica.worker.terminate();
  }

  private spawnReplica(lead: boolean): Promise<void> {
    const { entry, threads } = this;
    // Every big model's runs are counted (those of adaptive models choose their width by the count).
    const slot = SHARED_ENGINES.has(entry.engine) ? freeRunSlots.pop() : undefined;
    const intraOpThreads = entry.intraOpThreads ?? (threads.intraOpThreads || defaultIntraOpThreads(entry.engine, this.replicaCount, undefined, this.adaptive));
    const init: WorkerInit = {
      entry,
      dir: entry.absoluteDir,
      intraOpThreads,
      interOpThreads: threads.interOpThreads,
      niceness: entry.niceness ?? defaultNiceness(entry.engine, threads.niceness),
      // One replica has no one to share with, and keeps onnxruntime's pre-packed (slightly faster) matrices.
      ...(this.replicaCount > 1 && threads.sharedWeights ? { sharedWeights: threads.sharedWeights, leadReplica: lead } : {}),
      ...(threads.executionProviders?.length ? { executionProviders: [...threads.executionProviders] } : {}),
      ...(slot !== undefined ? { runGate: { ...RUN_SLOTS, slot } } : {}),
    };
    const worker = spawnWorker(WORKER_URL, { workerData: init });
    const replica: Replica = { worker, active: 0, jobs: new Map(), lead };
    return new Promise<void>((resolve, reject) => {
      let loaded = false;
      worker.on('message', (m: WorkerToMain) => {
        if (m.type === 'ready') {
          loaded = true;
          this.info = m.info;
          // The lead stays first: the pool hands a job to the first of the replicas with the fewest jobs.
          if (lead) this.replicas.unshift(replica);
          else this.replicas.push(replica);
          this.replacementFailed = false;
          this.respawnDelayMs = RESPAWN_DELAY_MS;
          // A replacement for a crashed replica takes over whoever is waiting, as many as it has room for.
          if (this.isReady) this.fill(replica);
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
        // A worker killed mid-run never counted its run out: its slot is cleared for the next worker.
        if (slot !== undefined) {
          clearSlot(RUN_SLOTS, slot);
          freeRunSlots.push(slot);
        }
        const index = this.replicas.indexOf(replica);
        if (index >= 0) this.replicas.splice(index, 1);
        const err = new EngineFailedError(this.entry.id, `worker exited with code ${code}`);
        const jobs = [...replica.jobs.values()];
        replica.jobs.clear();
        for (const job of jobs) job.onCrash(err);
        if (!loaded) reject(err);
        // A replica that dies while serving is replaced, so capacity recovers.
        else if (!this.closed) this.replace(lead);
      });
    });
  }

  private replace(lead: boolean): void {
    this.spawnReplica(lead).catch(() => {
      if (this.closed) return;
      if (this.replicas.length === 0) {
        // Nothing can serve the queue: fail it rather than leave it waiting, and keep trying in the background.
        this.replacementFailed = true;
        const err = new EngineFailedError(this.entry.id, 'the model replica crashed and could not be restarted');
        for (const waiter of this.waiters.drain()) waiter.fail(err);
      }
      this.respawnTimer = setTimeout(() => {
        this.respawnTimer = null;
        if (!this.closed) this.replace(lead);
      }, this.respawnDelayMs);
      this.respawnTimer.unref();
      this.respawnDelayMs = Math.min(RESPAWN_DELAY_MAX_MS, this.respawnDelayMs * 2);
    });
  }
}
