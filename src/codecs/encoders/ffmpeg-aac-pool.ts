/**
 * A pool of pre-spawned ffmpeg processes encoding s16le mono 24 kHz PCM (stdin) to ADTS AAC-LC (stdout),
 * for the `aac` and `fmp4` formats (no AAC encoder exists on npm). A spawn blocks the event loop for
 * 1–8 ms, so a request takes a process that is already running, and its replacement is spawned after the
 * request has started. Each process encodes exactly one stream (stdin EOF ends it), then exits.
 *
 * Why these ffmpeg arguments (measured on the bundled static ffmpeg 4.1, see the tests):
 * - `-probesize 32 -analyzeduration 0`: without them ffmpeg reads ≈1.9 s of input before encoding anything.
 * - NOT `-fflags +nobuffer`: it makes ffmpeg drop the packets read while probing (the first 1024 samples
 *   of speech vanish, the stream comes out one frame short).
 * - `-ar 25600` + `asetrate=24000`: the raw PCM demuxer cuts stdin into packets of sample_rate/25 samples
 *   and blocks until a packet is full. At 24000 that is 960 samples, which holds the first frame back to
 *   2880 input samples and makes output lag by up to one packet. Declaring 25600 Hz gives 1024-sample
 *   packets, aligned with AAC frames; `asetrate` only relabels the rate (no resampling — the ADTS output
 *   is byte-identical). Frames then appear exactly when the encoder can produce them: after n ≥ 2048
 *   input samples, floor(n / 1024) − 1 frames (one frame of priming plus one of lookahead).
 * - `-flush_packets 1`: write each ADTS frame to the pipe at once instead of filling an I/O buffer.
 * - `-aac_coder fast`: the bundled 4.1 build's default, named because newer builds (Debian's 5.1, a
 *   possible `KUMA_FFMPEG_PATH`) default to `twoloop`, which cost 3–4× the CPU here for speech.
 * - `-q:a 0.7 -aac_tns 0 -aac_pns 0`: VBR at a fixed quality, chosen on cost and on how much speech
 *   survives, both measured by `npm run bench:aac-settings` (load-tests/RESULTS.md). In ABR mode
 *   (`-b:a`) the encoder re-quantizes frames to steer towards the bitrate, which is most of its work —
 *   641–840 M instructions per 10 s of the demo voice, ffmpeg alone at ≈60× real time here — and it
 *   still overshoots (48k gave 73 kbit/s on short sentences). VBR costs ≈260 M at any quality. Survival:
 *   demo-voice sentences encoded, decoded and transcribed by the demo ASR, which hears any smearing of
 *   its formants: q 0.7 without temporal noise shaping and noise substitution keeps 40/40 exact at
 *   ≈44 kbit/s, like MP3 at 48k; ABR 48k with both kept 37/40, q 0.6 32/40. TNS caused most losses.
 *
 * Pre-roll: ffmpeg sets up its demuxer, filter graph and encoder only when the first packet arrives, which
 * took 4–65 ms per process here — on the first chunk's path. So a new process is fed 2048 samples of
 * silence at once: it initialises while idle and emits its first frame. The first PRE_ROLL_FRAMES frames
 * are dropped, after which the stream is laid out exactly like a fresh one (the last silent frame takes
 * the place of the priming frame; AAC-LC frames depend on nothing before them but the overlap, which is
 * silence either way), and the frame schedule above is unchanged.
 */

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { AdtsParser } from './adts.js';

/** ffmpeg's VBR quality for `aac` and `fmp4` (≈44–47 kbit/s for speech); see the header comment. */
export const AAC_VBR_QUALITY = '0.7';
/** See the header comment: the rate the demuxer is told, chosen for its 1024-sample packets. */
const DEMUX_RATE = 25600;

export const FFMPEG_AAC_ARGS: readonly string[] = Object.freeze([
  '-hide_banner', '-nostdin', '-nostats', '-loglevel', 'error',
  '-probesize', '32', '-analyzeduration', '0',
  '-f', 's16le', '-ar', String(DEMUX_RATE), '-ac', '1', '-i', 'pipe:0',
  '-af', 'asetrate=24000',
  '-c:a', 'aac', '-aac_coder', 'fast', '-aac_tns', '0', '-aac_pns', '0', '-q:a', AAC_VBR_QUALITY, '-f', 'adts', '-flush_packets', '1', 'pipe:1',
]);

/** `KUMA_FFMPEG_PATH`, else the static binary shipped inside the @ffmpeg-installer npm package. */
export function resolveFfmpegPath(): string {
  const fromEnv = process.env.KUMA_FFMPEG_PATH;
  if (fromEnv) return fromEnv;
  const require = createRequire(import.meta.url);
  return (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
}

const STDERR_TAIL_BYTES = 4096;
/** Silent samples written to every new process (two AAC frames: the least that makes ffmpeg emit one). */
const PRE_ROLL_SAMPLES = 2048;
/** Frames that come out of the pre-roll and are dropped: the priming frame and the first silent frame. */
const PRE_ROLL_FRAMES = PRE_ROLL_SAMPLES / 1024;

/**
 * One ffmpeg child with the bookkeeping every user needs: spawn outcome, exit, stderr tail, event-loop refs,
 * and its stdout cut into ADTS frames with the pre-roll frames removed.
 */
export class FfmpegProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves once the OS started the process; rejects if it could not be started (e.g. ENOENT). */
  readonly spawned: Promise<void>;
  /** Resolves after the process exited and its pipes closed (never rejects). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves (and sets isWarmed) once ffmpeg has initialised — its first pre-roll frame arrived — or exited. */
  readonly warmed: Promise<void>;
  isWarmed = false;
  spawnError: Error | undefined;
  private stderr = '';
  private readonly parser = new AdtsParser();
  private dropLeft = PRE_ROLL_FRAMES;
  private pending: Uint8Array[] = [];
  private consumer: ((frames: Uint8Array[]) => void) | undefined;

  constructor(readonly ffmpegPath: string) {
    this.child = spawn(ffmpegPath, [...FFMPEG_AAC_ARGS], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.spawned = new Promise((resolve, reject) => {
      this.child.once('spawn', resolve);
      this.child.once('error', (error) => {
        this.spawnError ??= new Error(`cannot start ffmpeg (${ffmpegPath}): ${error.message}`);
        reject(this.spawnError);
      });
    });
    this.spawned.catch(() => {}); // observed through `spawnError` / by whoever awaits it
    this.exited = new Promise((resolve) => {
      this.child.once('close', (code, signal) => resolve({ code, signal }));
      // A process that never started emits 'error' and may never emit 'close'.
      this.child.once('error', () => setImmediate(() => resolve({ code: null, signal: null })));
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (text: string) => {
      this.stderr = (this.stderr + text).slice(-STDERR_TAIL_BYTES);
    });
    // Writing to a process that died raises EPIPE on stdin; the exit status is what reports the failure.
    this.child.stdin.on('error', () => {});
    let warmedResolve!: () => void;
    this.warmed = new Promise<void>((resolve) => (warmedResolve = resolve)).then(() => {
      this.isWarmed = true;
    });
    void this.exited.then(warmedResolve);
    this.child.stdout.on('data', (chunk: Buffer) => {
      let frames = this.parser.push(chunk);
      if (frames.length === 0) return;
      warmedResolve();
      if (this.dropLeft > 0) {
        const dropped = Math.min(this.dropLeft, frames.length);
        this.dropLeft -= dropped;
        frames = frames.slice(dropped);
        if (frames.length === 0) return;
      }
      if (this.consumer) this.consumer(frames);
      else this.pending.push(...frames);
    });
    this.child.stdin.write(Buffer.alloc(PRE_ROLL_SAMPLES * 2));
  }

  /** Delivers the stream's frames (pre-roll removed) to `consumer`, starting with any that already arrived. */
  onFrames(consumer: (frames: Uint8Array[]) => void): void {
    this.consumer = consumer;
    const pending = this.pending;
    this.pending = [];
    if (pending.length > 0) consumer(pending);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.spawnError === undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  stderrTail(): string {
    return this.stderr.trim();
  }

  /** An idle pooled process must not keep Node running; an in-use one belongs to a live request. */
  setRef(ref: boolean): void {
    const handles = [this.child, this.child.stdin, this.child.stdout, this.child.stderr] as unknown as Array<Socket | { ref(): void; unref(): void }>;
    for (const handle of handles) {
      if (ref) handle.ref();
      else handle.unref();
    }
  }

  kill(): void {
    if (this.alive) this.child.kill('SIGKILL');
  }
}

export interface FfmpegAacPoolOptions {
  /** Warm processes kept ready (default 2; 0 disables pre-spawning). */
  size?: number;
  ffmpegPath?: string;
}

/**
 * Counters for metrics and tests: `warm` idle processes ready to be taken; `inUse` handed out and not yet
 * exited; `spawned` in all; `onDemandSpawns`, acquire() calls that found the pool empty and spawned on the
 * hot path; `replaced`, idle processes that died (or failed to start) and were replaced.
 */
export interface FfmpegAacPoolStats {
  warm: number;
  inUse: number;
  spawned: number;
  onDemandSpawns: number;
  replaced: number;
}

const MAX_REFILL_BACKOFF_MS = 5000;

export class FfmpegAacPool {
  readonly size: number;
  readonly ffmpegPath: string;
  private readonly warm: FfmpegProcess[] = [];
  private readonly inUse = new Set<FfmpegProcess>();
  private readonly counters = { spawned: 0, onDemandSpawns: 0, replaced: 0 };
  private closed = false;
  private refillTimer: NodeJS.Timeout | undefined;
  private refillScheduled = false;
  /** Idle deaths since a process last initialised; drives the backoff so a broken binary cannot spin. */
  private consecutiveFailures = 0;

  constructor(options: FfmpegAacPoolOptions = {}) {
    const size = options.size ?? 2;
    if (!Number.isInteger(size) || size < 0) throw new RangeError(`ffmpeg pool size must be a non-negative integer, got ${size}`);
    this.size = size;
    this.ffmpegPath = options.ffmpegPath ?? resolveFfmpegPath();
    this.refill();
  }

  /** Takes a warm process, or spawns one if none is ready. The caller owns it: write, end stdin, or kill(). */
  acquire(): FfmpegProcess {
    if (this.closed) throw new Error('ffmpeg AAC pool is closed');
    for (const dead of this.warm.filter((candidate) => !candidate.alive)) {
      this.warm.splice(this.warm.indexOf(dead), 1);
      this.counters.replaced++; // died idle before its exit handler ran; the refill below replaces it
    }
    // Prefer a process that has finished initialising; one still starting up beats spawning another.
    const warmIndex = Math.max(0, this.warm.findIndex((candidate) => candidate.isWarmed));
    const proc = this.warm.splice(warmIndex, 1)[0] ?? this.spawnOnDemand();
    proc.setRef(true);
    this.inUse.add(proc);
    void proc.exited.then(() => this.inUse.delete(proc));
    this.scheduleRefill(0);
    return proc;
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
    const all = [...this.warm, ...this.inUse];
    this.warm.length = 0;
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
    return new FfmpegProcess(this.ffmpegPath);
  }

  private spawnOnDemand(): FfmpegProcess {
    this.counters.onDemandSpawns++;
    return this.spawnOne();
  }

  /** Spawns after the current request's work (a spawn blocks the event loop for a few ms). */
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
      void proc.exited.then(() => this.onIdleExit(proc));
      // A process that got as far as encoding proves the binary works: end any backoff.
      void proc.warmed.then(() => proc.alive && (this.consecutiveFailures = 0));
    }
  }

  private onIdleExit(proc: FfmpegProcess): void {
    const index = this.warm.indexOf(proc);
    if (index < 0 || this.closed) return; // taken by a request (its owner handles the exit), or shutting down
    this.warm.splice(index, 1);
    this.counters.replaced++;
    this.consecutiveFailures++;
    const backoff = this.consecutiveFailures <= 1 ? 0 : Math.min(100 * 2 ** (this.consecutiveFailures - 2), MAX_REFILL_BACKOFF_MS);
    this.scheduleRefill(backoff);
  }
}

let shared: FfmpegAacPool | undefined;

/** The process-wide pool the encoders use; size from `KUMA_AAC_POOL_SIZE` (default 2). Created on first use. */
export function sharedAacPool(): FfmpegAacPool {
  const fromEnv = process.env.KUMA_AAC_POOL_SIZE;
  return (shared ??= new FfmpegAacPool(fromEnv ? { size: Number(fromEnv) } : {}));
}

/** Kills the shared pool's processes (server shutdown); the next sharedAacPool() starts a new pool. */
export async function closeSharedAacPool(): Promise<void> {
  const pool = shared;
  shared = undefined;
  await pool?.close();
}
