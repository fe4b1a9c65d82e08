/**
 * Runs upload decoding in a small pool of worker threads. Decoders block the thread they run on
 * (≈ 0.3–0.5 s per minute of compressed audio here, plus ≈ 0.25 s per minute to resample 44.1 kHz) and a
 * corrupt file can make one spin forever (the fuzz found one in the MP4 demuxer, now refused up front), so
 * the event loop must never run them: each job goes to an idle worker, under a per-job timeout; a worker
 * that overruns is terminated and replaced, and its job fails with AudioDecodeError('timeout'). Jobs
 * beyond the pool size wait in FIFO order (their timeout starts when a worker takes them). Workers start
 * on first use (≈ 0.3–0.5 s under tsx) and stay up until close().
 *
 * Limit of the isolation: V8 running out of memory in a worker still aborts the whole process on Node 20
 * (worker `resourceLimits` did not prevent it in our tests), so inputs that could make a decoder allocate
 * without bound are refused before decoding (mp4-guard.ts). A child process would isolate that too.
 *
 * Under tsx (dev, tests, `npm start`) the worker is a .ts file: Node 20 cannot start it with
 * `execArgv: ['--import', 'tsx']`, so an inline ESM bootstrap registers tsx's loader and then imports it.
 */
import { Worker } from 'node:worker_threads';
import { AudioDecodeError, type DecodedAudio } from '../types.js';
import type { DecodeOptions } from './decode-audio.js';
import type { DecodeJob, WorkerReply } from './decoder-worker.js';
import { spawnWorker } from '../../threads/spawn-worker.js';

export interface DecoderPoolOptions {
  /** Worker threads; default 2. */
  size?: number;
  /** Longest one decode may run before its worker is killed; default 30 000 ms. */
  timeoutMs?: number;
}

interface Job {
  id: number;
  bytes: Uint8Array;
  options: DecodeOptions;
  resolve(audio: DecodedAudio): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
}

const WORKER_URL = new URL(`./decoder-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

function startWorker(): Worker {
  return spawnWorker(WORKER_URL);
}

/** Rebuilds an error that crossed the thread boundary as data. */
function revive(e: { kind?: AudioDecodeError['kind']; name: string; message: string }): Error {
  if (e.kind) return new AudioDecodeError(e.kind, e.message);
  const error = e.name === 'RangeError' ? new RangeError(e.message) : new Error(e.message);
  if (e.name !== 'RangeError') error.name = e.name;
  return error;
}

export class DecoderPool {
  private readonly size: number;
  private readonly timeoutMs: number;
  private readonly slots = new Set<Slot>();
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(opts: DecoderPoolOptions = {}) {
    this.size = Math.max(1, Math.floor(opts.size ?? 2));
    this.timeoutMs = opts.timeoutMs ?? 30_000;
  }

  /**
   * Decodes `bytes` in a worker. Takes ownership of `bytes`: when they span their whole ArrayBuffer that
   * buffer is transferred to the worker (and detached here) instead of copied; do not use them afterwards.
   */
  decode(bytes: Uint8Array, options: DecodeOptions): Promise<DecodedAudio> {
    if (this.closed) return Promise.reject(new Error('DecoderPool is closed'));
    return new Promise<DecodedAudio>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, bytes, options, resolve, reject });
      this.pump();
    });
  }

  /** Stops every worker; jobs still queued or running are rejected. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const error = new Error('DecoderPool is closed');
    for (const job of this.queue.splice(0)) job.reject(error);
    const slots = [...this.slots];
    this.slots.clear();
    for (const slot of slots) this.finish(slot, (job) => job.reject(error));
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  /** Hands queued jobs to idle ready workers, starting workers up to the pool size. */
  private pump(): void {
    if (this.closed) return;
    for (const slot of this.slots) {
      const job = slot.ready && !slot.job ? this.queue.shift() : undefined;
      if (job) this.dispatch(slot, job);
    }
    const starting = [...this.slots].filter((s) => !s.ready).length;
    if (this.queue.length > starting && this.slots.size < this.size) this.spawn();
  }

  private spawn(): void {
    const slot: Slot = { worker: startWorker(), ready: false };
    this.slots.add(slot);
    slot.worker.unref(); // an idle pool must not keep the process alive; dispatch() refs it while busy
    slot.worker.on('message', (reply: WorkerReply) => this.onReply(slot, reply));
    slot.worker.on('error', (error) => this.onCrash(slot, error));
    slot.worker.on('exit', (code) => this.onCrash(slot, new Error(`decoder worker exited with code ${code}`)));
  }

  private dispatch(slot: Slot, job: Job): void {
    slot.job = job;
    slot.worker.ref();
    slot.timer = setTimeout(() => this.onTimeout(slot), this.timeoutMs);
    const { bytes } = job;
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    const message: DecodeJob = { id: job.id, bytes: whole ? bytes : bytes.slice(), options: job.options };
    try {
      slot.worker.postMessage(message, [message.bytes.buffer as ArrayBuffer]);
    } catch {
      // Some buffers cannot be transferred (Node's pooled Buffer memory): send a copy instead.
      const copy = bytes.slice();
      slot.worker.postMessage({ ...message, bytes: copy } satisfies DecodeJob, [copy.buffer]);
    }
  }

  private onReply(slot: Slot, reply: WorkerReply): void {
    if (reply.type === 'ready') {
      slot.ready = true;
    } else if (slot.job?.id === reply.id) {
      this.finish(slot, (job) => (reply.type === 'done' ? job.resolve(reply.audio) : job.reject(revive(reply.error))));
    }
    this.pump();
  }

  private onTimeout(slot: Slot): void {
    const seconds = this.timeoutMs / 1000;
    this.finish(slot, (job) => job.reject(new AudioDecodeError('timeout', `Decoding the audio took longer than ${seconds} s and was stopped.`)));
    this.retire(slot);
  }

  /** The worker died (uncaught error, out of memory, exit): fail its job, replace it on demand. */
  private onCrash(slot: Slot, error: Error): void {
    if (!this.slots.has(slot)) return; // already retired or closed
    const wasReady = slot.ready;
    this.finish(slot, (job) => job.reject(new AudioDecodeError('corrupt', `The audio decoder failed on this file: ${error.message}`)));
    this.retire(slot);
    if (!wasReady) {
      // It died while starting: queued jobs would only start more workers that die the same way.
      const failure = new Error(`decoder worker failed to start: ${error.message}`);
      for (const job of this.queue.splice(0)) job.reject(failure);
    }
  }

  /** Clears the slot's job and timer, then settles the job (if any) with `settle`. */
  private finish(slot: Slot, settle: (job: Job) => void): void {
    const job = slot.job;
    clearTimeout(slot.timer);
    slot.job = undefined;
    slot.timer = undefined;
    if (!this.closed) slot.worker.unref();
    if (job) settle(job);
  }

  private retire(slot: Slot): void {
    this.slots.delete(slot);
    slot.worker.removeAllListeners('message');
    void slot.worker.terminate();
    this.pump();
  }
}
