/**
 * Runs upload decoding in a small pool of worker threads, as streams of bounded windows (decoded-stream.ts)
 * read at the consumer's pace. Decoders block the thread they run on (≈ 0.3–0.5 s per minute of
 * compressed audio here, plus ≈ 0.25 s per minute to resample 44.1 kHz) and a corrupt file can make one
 * spin forever (the fuzz found one in the MP4 demuxer, now refused up front), so the event loop never runs
 * them.
 *
 * Capacity: each worker runs up to `streamsPerWorker` streams at once, interleaved step by step; a stream
 * whose consumer is slow (the model is busy) is paused by flow control and costs no CPU, so a long
 * transcription does not hold a whole thread. Jobs beyond that wait in FIFO order, up to `maxQueue`;
 * then `open` fails at once with DecoderBusyError (a 503 with Retry-After for clients).
 *
 * Time limit: a job fails with AudioDecodeError('timeout') when its own decoding work passes `timeoutMs`
 * (measured in the worker, waits excluded). A worker that stays silent for `timeoutMs` while it has work
 * to do is stuck in one step: it is terminated and replaced; the job in that step fails with 'timeout',
 * the others on that worker with DecoderRestartedError (a 503: nothing is wrong with them).
 *
 * Limit of the isolation: V8 running out of memory in a worker still aborts the whole process on Node 20
 * (worker `resourceLimits` did not prevent it in our tests), so inputs that could make a decoder allocate
 * without bound are refused before decoding (mp4-guard.ts). A child process would isolate that too.
 */
import type { Worker } from 'node:worker_threads';
import { AudioDecodeError, DecoderBusyError, DecoderRestartedError, type DecodedAudio } from '../types.js';
import { decodedAudio } from './decode-audio.js';
import type { DecodeOptions } from './decode-stream.js';
import { DecodedStream } from './decoded-stream.js';
import type { ErrorData, PoolToWorker, WorkerReply } from './decoder-worker.js';
import { spawnWorker } from '../../threads/spawn-worker.js';

export interface DecoderPoolOptions {
  /** Worker threads; default 2. */
  size?: number;
  /** Decoding work one upload may take, and the longest a worker may stay silent while busy; default 30 000 ms. */
  timeoutMs?: number;
  /** Streams one worker runs at once; default 16. */
  streamsPerWorker?: number;
  /** Jobs that may wait for a free stream; default unbounded (servers pass their configured bound). */
  maxQueue?: number;
  /** Windows a stream decodes ahead of its consumer; default 2. */
  credit?: number;
}

interface Job {
  id: number;
  bytes: Uint8Array;
  options: DecodeOptions;
  opened: { resolve(stream: DecodedStream): void; reject(error: Error): void };
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  slot?: Slot;
  stream?: DecodedStream;
  /** Windows sent by the worker and not yet taken by the consumer. */
  unread: number;
  cancelled: boolean;
  startedAt: number;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  jobs: Map<number, Job>;
  /** The job whose step the worker announced last. */
  current: number | undefined;
  lastHeard: number;
}

const WORKER_URL = new URL(`./decoder-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** Rebuilds an error that crossed the thread boundary as data. */
function revive(e: ErrorData): Error {
  if (e.kind) return new AudioDecodeError(e.kind, e.message);
  const error = e.name === 'RangeError' ? new RangeError(e.message) : new Error(e.message);
  if (e.name !== 'RangeError') error.name = e.name;
  return error;
}

const abortError = () => Object.assign(new Error('The decode was aborted'), { name: 'AbortError' });

export class DecoderPool {
  private readonly size: number;
  private readonly timeoutMs: number;
  private readonly streamsPerWorker: number;
  private readonly maxQueue: number;
  private readonly credit: number;
  private readonly slots = new Set<Slot>();
  private readonly queue: Job[] = [];
  private readonly watchdog: NodeJS.Timeout;
  private avgJobMs = 1000;
  private nextId = 1;
  private closed = false;

  constructor(opts: DecoderPoolOptions = {}) {
    this.size = Math.max(1, Math.floor(opts.size ?? 2));
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.streamsPerWorker = Math.max(1, Math.floor(opts.streamsPerWorker ?? 16));
    this.maxQueue = opts.maxQueue ?? Infinity;
    this.credit = Math.max(1, Math.floor(opts.credit ?? 2));
    this.watchdog = setInterval(() => this.checkStuck(), Math.max(5, Math.min(1000, this.timeoutMs / 4)));
    this.watchdog.unref();
  }

  /** Streams running and waiting, for metrics and tests. */
  stats(): { workers: number; running: number; queued: number } {
    return { workers: this.slots.size, running: [...this.slots].reduce((n, s) => n + s.jobs.size, 0), queued: this.queue.length };
  }

  /**
   * Starts decoding `bytes` and resolves once the worker has read the file's header (format, declared
   * duration), with the stream of windows to read. Rejects with AudioDecodeError for a file refused up
   * front, with DecoderBusyError when the wait queue is full. Takes ownership of `bytes`: when they span
   * their whole ArrayBuffer it is transferred to the worker (detached here) instead of copied.
   */
  open(bytes: Uint8Array, options: DecodeOptions, signal?: AbortSignal): Promise<DecodedStream> {
    if (this.closed) return Promise.reject(new Error('DecoderPool is closed'));
    if (signal?.aborted) return Promise.reject(abortError());
    return new Promise<DecodedStream>((resolve, reject) => {
      const job: Job = { id: this.nextId++, bytes, options, opened: { resolve, reject }, signal, onAbort: undefined, unread: 0, cancelled: false, startedAt: 0 };
      const busy = this.refusal();
      if (busy) return reject(busy);
      job.onAbort = () => this.abort(job);
      signal?.addEventListener('abort', job.onAbort, { once: true });
      this.queue.push(job);
      this.pump();
    });
  }

  /** Decodes a whole upload into one array (for audio known to fit in memory). */
  async decode(bytes: Uint8Array, options: DecodeOptions): Promise<DecodedAudio> {
    const stream = await this.open(bytes, options);
    const windows: Float32Array[] = [];
    for await (const window of stream) windows.push(window);
    return decodedAudio(stream.summary!, windows);
  }

  /** Stops every worker; jobs still queued or running fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.watchdog);
    const error = new Error('DecoderPool is closed');
    for (const job of this.queue.splice(0)) this.settle(job, error);
    const slots = [...this.slots];
    this.slots.clear();
    for (const slot of slots) for (const job of [...slot.jobs.values()]) this.settle(job, error);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  /** The DecoderBusyError an upload opened now would get (every stream taken, wait queue full), or null. */
  refusal(): DecoderBusyError | null {
    if (this.queue.length < this.maxQueue || this.hasRoom()) return null;
    const capacity = this.size * this.streamsPerWorker;
    return new DecoderBusyError(Math.max(1, Math.ceil((this.avgJobMs * (this.queue.length + 1)) / capacity / 1000)));
  }

  private hasRoom(): boolean {
    return [...this.slots].some((s) => s.ready && s.jobs.size < this.streamsPerWorker);
  }

  /** Hands queued jobs to the least busy ready workers; starts a worker when every one has work. */
  private pump(): void {
    if (this.closed) return;
    while (this.queue.length) {
      const free = [...this.slots].filter((s) => s.ready && s.jobs.size < this.streamsPerWorker).sort((a, b) => a.jobs.size - b.jobs.size)[0];
      if (!free) break;
      this.dispatch(free, this.queue.shift()!);
    }
    const starting = [...this.slots].some((s) => !s.ready);
    const allBusy = [...this.slots].every((s) => s.jobs.size > 0);
    if (!starting && allBusy && this.slots.size < this.size && (this.queue.length > 0 || this.slots.size > 0)) this.spawn();
  }

  private spawn(): void {
    const slot: Slot = { worker: spawnWorker(WORKER_URL), ready: false, jobs: new Map(), current: undefined, lastHeard: performance.now() };
    this.slots.add(slot);
    slot.worker.unref(); // an idle pool must not keep the process alive; dispatch() refs it while busy
    slot.worker.on('message', (reply: WorkerReply) => this.onReply(slot, reply));
    slot.worker.on('error', (error) => this.onCrash(slot, error));
    slot.worker.on('exit', (code) => this.onCrash(slot, new Error(`decoder worker exited with code ${code}`)));
  }

  private dispatch(slot: Slot, job: Job): void {
    job.slot = slot;
    job.startedAt = performance.now();
    slot.jobs.set(job.id, job);
    slot.lastHeard = performance.now();
    slot.worker.ref();
    const { bytes } = job;
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    const message: PoolToWorker = { type: 'start', id: job.id, bytes: whole ? bytes : bytes.slice(), options: job.options, credit: this.credit, budgetMs: this.timeoutMs };
    job.bytes = new Uint8Array(0); // the worker owns them now
    try {
      slot.worker.postMessage(message, [message.bytes.buffer as ArrayBuffer]);
    } catch {
      // Some buffers cannot be transferred (Node's pooled Buffer memory): send a copy instead.
      const copy = message.bytes.slice();
      slot.worker.postMessage({ ...message, bytes: copy } satisfies PoolToWorker, [copy.buffer]);
    }
  }

  private onReply(slot: Slot, reply: WorkerReply): void {
    slot.lastHeard = performance.now();
    if (reply.type === 'ready') {
      slot.ready = true;
      this.pump();
      return;
    }
    if (reply.type === 'step') {
      slot.current = reply.id;
      return;
    }
    const job = slot.jobs.get(reply.id);
    if (!job) return;
    if (reply.type === 'header') {
      if (job.cancelled) return;
      job.stream = new DecodedStream(reply.header, { credit: () => this.giveCredit(job), cancel: () => this.cancel(job) });
      job.opened.resolve(job.stream);
    } else if (reply.type === 'window') {
      job.unread++;
      job.stream?.push(reply.samples);
    } else if (reply.type === 'done') {
      job.stream?.end(reply.summary);
      this.settle(job);
    } else if (reply.type === 'failed') {
      this.settle(job, revive(reply.error));
    } else {
      this.settle(job, abortError());
    }
  }

  private giveCredit(job: Job): void {
    job.unread--;
    if (!job.slot || !job.slot.jobs.has(job.id)) return;
    job.slot.lastHeard = Math.max(job.slot.lastHeard, performance.now()); // a paused job resumes: time its work afresh
    job.slot.worker.postMessage({ type: 'credit', id: job.id, amount: 1 } satisfies PoolToWorker);
  }

  private cancel(job: Job): void {
    if (job.cancelled || !job.slot || !job.slot.jobs.has(job.id)) return;
    job.cancelled = true;
    job.slot.worker.postMessage({ type: 'cancel', id: job.id } satisfies PoolToWorker);
  }

  private abort(job: Job): void {
    const index = this.queue.indexOf(job);
    if (index >= 0) {
      this.queue.splice(index, 1);
      this.settle(job, abortError());
    } else if (job.stream) {
      job.stream.close(abortError());
    } else {
      job.opened.reject(abortError());
      this.cancel(job);
    }
  }

  /** The job is over (its worker said so, or the worker is gone): fail it with `error` if given, free its place. */
  private settle(job: Job, error?: Error): void {
    if (error) {
      if (job.stream) job.stream.fail(error);
      else job.opened.reject(error);
    }
    if (job.onAbort) job.signal?.removeEventListener('abort', job.onAbort);
    const slot = job.slot;
    if (slot?.jobs.delete(job.id)) {
      this.avgJobMs = this.avgJobMs * 0.8 + (performance.now() - job.startedAt) * 0.2;
      if (slot.jobs.size === 0 && !this.closed) slot.worker.unref();
    }
    this.pump();
  }

  /** A worker with work to do that has said nothing for timeoutMs is stuck in one step. */
  private checkStuck(): void {
    const now = performance.now();
    for (const slot of this.slots) {
      const working = [...slot.jobs.values()].some((j) => j.cancelled || j.unread < this.credit);
      if (!slot.ready || !working || now - slot.lastHeard <= this.timeoutMs) continue;
      const seconds = this.timeoutMs / 1000;
      this.retire(slot, () => new AudioDecodeError('timeout', `Decoding the audio took longer than ${seconds} s and was stopped.`));
    }
  }

  /** The worker died (uncaught error, out of memory, exit): fail its jobs, replace it on demand. */
  private onCrash(slot: Slot, error: Error): void {
    if (!this.slots.has(slot)) return; // already retired or closed
    const wasReady = slot.ready;
    this.retire(slot, () => new AudioDecodeError('corrupt', `The audio decoder failed on this file: ${error.message}`));
    if (!wasReady) {
      // It died while starting: queued jobs would only start more workers that die the same way.
      const failure = new Error(`decoder worker failed to start: ${error.message}`);
      for (const job of this.queue.splice(0)) this.settle(job, failure);
    }
  }

  /** Removes a worker: the job it was working on fails with `culprit()`, the others with DecoderRestartedError. */
  private retire(slot: Slot, culprit: () => Error): void {
    this.slots.delete(slot);
    slot.worker.removeAllListeners('message');
    void slot.worker.terminate();
    for (const job of [...slot.jobs.values()]) this.settle(job, job.id === slot.current ? culprit() : new DecoderRestartedError());
    this.pump();
  }
}
