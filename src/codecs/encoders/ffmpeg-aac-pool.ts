/**
 * The pool of ffmpeg processes behind the `aac` and `fmp4` formats (ffmpeg-process.ts). ffmpeg needs
 * 4–65 ms of CPU to start and initialise, more than encoding a sentence, so:
 * - a request takes a process that is already running and initialised (`size` are kept ready, spawned
 *   through the process spawner so that no spawn blocks the event loop);
 * - a process whose stream ended cleanly comes back (release) and serves the next stream, up to
 *   MAX_STREAMS_PER_PROCESS; so after a burst the pool holds as many ready processes as the burst needed
 *   (up to `maxIdle`), and the next burst starts none. Idle processes beyond `size` are stopped after
 *   IDLE_TTL_MS (each costs ≈ 2 MB of private memory; the binary's pages are shared).
 * - a stream that failed or was cut off kills its process: its state is unknown.
 */
import { FfmpegProcess, resolveFfmpegPath } from './ffmpeg-process.js';

export { FFMPEG_AAC_ARGS, FfmpegProcess, resolveFfmpegPath } from './ffmpeg-process.js';

export interface FfmpegAacPoolOptions {
  /** Warm processes kept ready at all times (default 2; 0 disables pre-spawning). */
  size?: number;
  /** Most idle processes kept after a burst (default 64, at least `size`). */
  maxIdle?: number;
  /** The ffmpeg binary; default the one in @ffmpeg-installer (resolveFfmpegPath). */
  ffmpegPath?: string;
  /** Niceness of a process once its stream's first audio went out (default 15; FfmpegProcess.deprioritize). */
  continuationNiceness?: number;
}

/**
 * Counters for metrics and tests: `warm` idle processes ready to be taken; `inUse` handed out and not yet
 * exited or returned; `spawned` in all; `onDemandSpawns`, acquire() calls that found the pool empty and
 * spawned on the hot path; `replaced`, idle processes that died (or failed to start) and were replaced;
 * `reused`, streams served by a process that had already served one.
 */
export interface FfmpegAacPoolStats {
  warm: number;
  inUse: number;
  spawned: number;
  onDemandSpawns: number;
  replaced: number;
  reused: number;
}

const MAX_REFILL_BACKOFF_MS = 5000;
/** A process is retired after this many streams (bounds whatever state ffmpeg might accumulate). */
export const MAX_STREAMS_PER_PROCESS = 500;
/** Idle processes beyond `size` are stopped after this long unused. */
const IDLE_TTL_MS = 60_000;

export class FfmpegAacPool {
  readonly size: number;
  readonly maxIdle: number;
  readonly ffmpegPath: string;
  /**
   * Niceness of a process after its stream's first audio: below the TTS replicas (10), which make every
   * stream's first phrase (see FfmpegProcess.deprioritize).
   */
  readonly continuationNiceness: number;
  private readonly warm: FfmpegProcess[] = [];
  private readonly idleSince = new Map<FfmpegProcess, number>();
  private readonly inUse = new Set<FfmpegProcess>();
  private readonly counters = { spawned: 0, onDemandSpawns: 0, replaced: 0, reused: 0 };
  private closed = false;
  private refillTimer: NodeJS.Timeout | undefined;
  private refillScheduled = false;
  private readonly sweepTimer: NodeJS.Timeout;
  /** Idle deaths since a process last initialised; drives the backoff so a broken binary cannot spin. */
  private consecutiveFailures = 0;

  constructor(options: FfmpegAacPoolOptions = {}) {
    const size = options.size ?? 2;
    if (!Number.isInteger(size) || size < 0) throw new RangeError(`ffmpeg pool size must be a non-negative integer, got ${size}`);
    this.size = size;
    this.maxIdle = Math.max(size, options.maxIdle ?? 64);
    this.ffmpegPath = resolveFfmpegPath(options.ffmpegPath);
    this.continuationNiceness = options.continuationNiceness ?? 15;
    this.sweepTimer = setInterval(() => this.sweepIdle(), IDLE_TTL_MS / 4).unref();
    this.refill();
  }

  /**
   * Takes a warm process, or spawns one if none is ready. The caller owns it until it gives it back
   * with release() (its stream ended cleanly) or kills it.
   */
  acquire(): FfmpegProcess {
    if (this.closed) throw new Error('ffmpeg AAC pool is closed');
    for (const dead of this.warm.filter((candidate) => !candidate.alive)) {
      this.removeWarm(dead);
      this.counters.replaced++; // died idle before its exit handler ran; the refill below replaces it
    }
    // Prefer a process that has finished initialising (the most recently used: its pages are warm);
    // one still starting up beats spawning another.
    let index = -1;
    for (let i = this.warm.length - 1; i >= 0 && index < 0; i--) if (this.warm[i]!.isWarmed) index = i;
    const proc = (index >= 0 ? this.warm[index] : this.warm[0]) ?? this.spawnOnDemand();
    this.removeWarm(proc);
    if (proc.streams > 0) this.counters.reused++;
    proc.setRef(true);
    this.inUse.add(proc);
    this.scheduleRefill(0);
    return proc;
  }

  /**
   * Gives back a process whose stream ended cleanly (FfmpegProcess.endStream resolved true). It serves
   * the next stream unless it has served enough, could not get its normal priority back, or the pool has
   * enough idle ones already; then it is stopped.
   */
  release(proc: FfmpegProcess): void {
    this.inUse.delete(proc);
    const keep = !this.closed && proc.alive && proc.streams < MAX_STREAMS_PER_PROCESS && this.warm.length < this.maxIdle && proc.restorePriority();
    if (!keep) {
      proc.kill();
      return;
    }
    proc.setRef(false);
    this.warm.push(proc);
    this.idleSince.set(proc, Date.now());
  }

  stats(): FfmpegAacPoolStats {
    return { warm: this.warm.length, inUse: this.inUse.size, ...this.counters };
  }

  /** Process ids, for diagnostics and for tests that check nothing is left running. */
  pids(): { warm: number[]; inUse: number[] } {
    const ids = (procs: Iterable<FfmpegProcess>): number[] => [...procs].flatMap((proc) => (proc.pid === undefined ? [] : [proc.pid]));
    return { warm: ids(this.warm), inUse: ids(this.inUse) };
  }

  /** Resolves when `size` warm processes are started and initialised (for startup and tests). */
  async ready(): Promise<void> {
    this.refill();
    const warming = [...this.warm];
    // Idle processes are unref'd; without this a script awaiting ready() could exit mid-wait.
    for (const proc of warming) proc.setRef(true);
    await Promise.all(warming.map((proc) => proc.warmed));
    for (const proc of warming) if (this.warm.includes(proc)) proc.setRef(false);
  }

  /** Kills every process, warm and in use, and resolves once all have exited. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.refillTimer) clearTimeout(this.refillTimer);
    clearInterval(this.sweepTimer);
    const all = [...this.warm, ...this.inUse];
    this.warm.length = 0;
    this.idleSince.clear();
    for (const proc of all) {
      // Idle processes are unref'd; re-ref them so the event loop stays up until their exit is seen
      // (otherwise an awaiting caller can be left with a promise that never settles as Node winds down).
      proc.setRef(true);
      proc.kill();
    }
    await Promise.all(all.map((proc) => proc.exited));
  }

  private spawnOne(): FfmpegProcess {
    this.counters.spawned++;
    const proc = new FfmpegProcess(this.ffmpegPath);
    void proc.exited.then(() => this.onExit(proc));
    // A process that got as far as encoding proves the binary works: end any backoff.
    void proc.warmed.then(() => proc.alive && (this.consecutiveFailures = 0));
    return proc;
  }

  private spawnOnDemand(): FfmpegProcess {
    this.counters.onDemandSpawns++;
    return this.spawnOne();
  }

  private removeWarm(proc: FfmpegProcess): void {
    const index = this.warm.indexOf(proc);
    if (index >= 0) this.warm.splice(index, 1);
    this.idleSince.delete(proc);
  }

  /** Spawns after the current request's work. */
  private scheduleRefill(delayMs: number): void {
    if (this.closed || this.refillScheduled) return;
    this.refillScheduled = true;
    const run = (): void => {
      this.refillScheduled = false;
      this.refillTimer = undefined;
      this.refill();
    };
    if (delayMs === 0) setImmediate(run);
    else this.refillTimer = setTimeout(run, delayMs).unref();
  }

  private refill(): void {
    while (!this.closed && this.warm.length < this.size) {
      const proc = this.spawnOne();
      proc.setRef(false);
      this.warm.push(proc);
      this.idleSince.set(proc, Date.now());
    }
  }

  /** Stops idle processes beyond `size` that have not been used for IDLE_TTL_MS. */
  private sweepIdle(): void {
    const cutoff = Date.now() - IDLE_TTL_MS;
    for (const proc of [...this.warm]) {
      if (this.warm.length <= this.size) return;
      if ((this.idleSince.get(proc) ?? 0) > cutoff) continue;
      this.removeWarm(proc);
      proc.kill();
    }
  }

  private onExit(proc: FfmpegProcess): void {
    this.inUse.delete(proc);
    if (!this.warm.includes(proc) || this.closed) return; // a request's (its owner handles the exit), or shutting down
    this.removeWarm(proc);
    this.counters.replaced++;
    this.consecutiveFailures++;
    const backoff = this.consecutiveFailures <= 1 ? 0 : Math.min(100 * 2 ** (this.consecutiveFailures - 2), MAX_REFILL_BACKOFF_MS);
    this.scheduleRefill(backoff);
  }
}

let shared: FfmpegAacPool | undefined;

/**
 * A process-wide pool with the default settings, created on first use: what AAC encoders use when they are
 * given none (tests, benches). A server never uses it: it builds its own from its config (speech-encoders.ts).
 */
export function sharedAacPool(): FfmpegAacPool {
  return (shared ??= new FfmpegAacPool());
}

/** Kills the shared pool's processes; the next sharedAacPool() starts a new pool. */
export async function closeSharedAacPool(): Promise<void> {
  const pool = shared;
  shared = undefined;
  await pool?.close();
}
