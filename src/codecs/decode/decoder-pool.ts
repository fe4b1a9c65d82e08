/**
 * Runs upload decoding in a small pool of child processes (decoder-child.ts), as streams of bounded
 * windows (decoded-stream.ts) read at the consumer's pace. Decoders block what they run on (≈ 0.3–0.5 s
 * per minute of compressed audio here, plus ≈ 0.25 s per minute to resample 44.1 kHz), a corrupt file can
 * make one spin forever, and a hostile one can make one allocate without bound, so the server's process
 * never runs them.
 *
 * Capacity: each process runs up to `streamsPerWorker` streams at once, interleaved step by step; a stream
 * whose consumer is slow (the model is busy) is paused by flow control and costs no CPU, so a long
 * transcription does not hold a whole process. Jobs beyond that wait, up to `maxQueue`, served
 * round-robin across accounts (round-robin-queue.ts); then `open` fails at once with DecoderBusyError (a 503
 * with Retry-After for clients).
 *
 * Time limit: a job fails with AudioDecodeError('timeout') when its own decoding work passes `timeoutMs`
 * (measured in the child, waits excluded). A child that stays silent for `timeoutMs` while it has work
 * to do is stuck in one step: it is killed and replaced; the job in that step fails with 'timeout',
 * the others on that child with DecoderRestartedError (a 503: nothing is wrong with them).
 *
 * Memory (decoder-process.ts): a child may use `memoryMb` of its own plus twice the uploads it holds;
 * over that it is killed, as it is when V8 aborts it. The job whose step was running when it died is the
 * culprit (steps are announced, and one child runs one step at a time): it fails with a 400-mapped
 * AudioDecodeError; the others on that child with DecoderRestartedError. The MP4 guards (mp4-guard.ts)
 * stay the first line: they refuse the known bombs before any decoding.
 */
import { AudioDecodeError, DecoderBusyError, DecoderRestartedError, type DecodedAudio } from '../types.js';
import { decodedAudio } from './decode-audio.js';
import type { DecodeOptions } from './decode-stream.js';
import { DecodedStream } from './decoded-stream.js';
import type { ChildReply, ErrorData, PoolToChild } from './decoder-child.js';
import { DecoderProcess, type DecoderExit } from './decoder-process.js';
import { RoundRobinQueue } from './round-robin-queue.js';

export interface DecoderPoolOptions {
  /** Child processes; default 2. */
  size?: number;
  /** Decoding work one upload may take, and the longest a child may stay silent while busy; default 30 000 ms. */
  timeoutMs?: number;
  /** Streams one child runs at once; default 16. */
  streamsPerWorker?: number;
  /** Jobs that may wait for a free stream; default unbounded (servers pass their configured bound). */
  maxQueue?: number;
  /** Windows a stream decodes ahead of its consumer; default 2. */
  credit?: number;
  /**
   * Memory one child may use besides the uploads it holds (counted twice: the copy it received and the
   * pieces an MP4 is re-ordered into), in MB; also its V8 heap limit. Default 512.
   */
  memoryMb?: number;
}

/**
 * What a job decodes: the upload's bytes, or the file an upload was spooled to. A file is read by the
 * child itself: sending an upload's bytes over the IPC channel serializes them on the server's event
 * loop (≈ 100 ms for 11 MB here: a stall every other request felt, issue P12 point 13).
 */
export type DecoderInput = Uint8Array | { path: string; size: number };

interface Job {
  id: number;
  account: string;
  input: DecoderInput;
  /** The upload's size, for the memory allowance of the child decoding it. */
  size: number;
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
  child: DecoderProcess;
  ready: boolean;
  jobs: Map<number, Job>;
  /** The job whose step the child announced last. */
  current: number | undefined;
  lastHeard: number;
}

const MiB = 1024 * 1024;
/** How often busy children's resident memory is sampled: a runaway decoder grows by ≈ 20 MB per 50 ms here. */
const MEMORY_CHECK_MS = 50;

/** Rebuilds an error that crossed the process boundary as data. */
function revive(e: ErrorData): Error {
  if (e.kind) return new AudioDecodeError(e.kind, e.message);
  const error = e.name === 'RangeError' ? new RangeError(e.message) : new Error(e.message);
  if (e.name !== 'RangeError') error.name = e.name;
  return error;
}

const EMPTY = new Uint8Array(0);

const abortError = () => Object.assign(new Error('The decode was aborted'), { name: 'AbortError' });

export class DecoderPool {
  private readonly size: number;
  private readonly timeoutMs: number;
  private readonly streamsPerWorker: number;
  private readonly maxQueue: number;
  private readonly credit: number;
  private readonly memoryMb: number;
  private readonly slots = new Set<Slot>();
  private readonly queue = new RoundRobinQueue<Job>();
  private readonly watchdog: NodeJS.Timeout;
  private readonly memoryWatch: NodeJS.Timeout;
  private avgJobMs = 1000;
  private nextId = 1;
  private closed = false;

  constructor(opts: DecoderPoolOptions = {}) {
    this.size = Math.max(1, Math.floor(opts.size ?? 2));
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.streamsPerWorker = Math.max(1, Math.floor(opts.streamsPerWorker ?? 16));
    this.maxQueue = opts.maxQueue ?? Infinity;
    this.credit = Math.max(1, Math.floor(opts.credit ?? 2));
    this.memoryMb = Math.max(64, opts.memoryMb ?? 512);
    this.watchdog = setInterval(() => this.checkStuck(), Math.max(5, Math.min(1000, this.timeoutMs / 4)));
    this.watchdog.unref();
    this.memoryWatch = setInterval(() => this.checkMemory(), MEMORY_CHECK_MS);
    this.memoryWatch.unref();
  }

  /**
   * Starts the first child now. Forking copies the server's page tables, so a spawn blocks its event loop
   * for a time that grows with its resident memory (≈ 45–65 ms with the demo models loaded): the first
   * upload's path, and every request waiting on the loop then, should not pay it. Further children (up to
   * `size`) still start when every one has work.
   */
  warm(): void {
    if (!this.closed && this.slots.size === 0) this.spawn();
  }

  /** Streams running and waiting, for metrics and tests. */
  stats(): { workers: number; running: number; queued: number } {
    return { workers: this.slots.size, running: [...this.slots].reduce((n, s) => n + s.jobs.size, 0), queued: this.queue.size };
  }

  /**
   * Starts decoding `input` and resolves once the child has read the file's header (format, declared
   * duration), with the stream of windows to read. Rejects with AudioDecodeError for a file refused up
   * front, with DecoderBusyError when the wait queue is full. Takes ownership of bytes (the pool drops
   * its reference once they are sent); a file must stay until the returned promise settles (the child has
   * read it by then). `account` is whose turn the job takes in the wait queue.
   */
  open(input: DecoderInput, options: DecodeOptions, signal?: AbortSignal, account = ''): Promise<DecodedStream> {
    if (this.closed) return Promise.reject(new Error('DecoderPool is closed'));
    if (signal?.aborted) return Promise.reject(abortError());
    return new Promise<DecodedStream>((resolve, reject) => {
      const job: Job = {
        id: this.nextId++,
        account,
        input,
        size: input instanceof Uint8Array ? input.byteLength : input.size,
        options,
        opened: { resolve, reject },
        signal,
        onAbort: undefined,
        unread: 0,
        cancelled: false,
        startedAt: 0,
      };
      const busy = this.refusal();
      if (busy) return reject(busy);
      job.onAbort = () => this.abort(job);
      signal?.addEventListener('abort', job.onAbort, { once: true });
      this.queue.push(account, job);
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

  /** Stops every child; jobs still queued or running fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.watchdog);
    clearInterval(this.memoryWatch);
    const error = new Error('DecoderPool is closed');
    for (const job of this.queue.drain()) this.settle(job, error);
    const slots = [...this.slots];
    this.slots.clear();
    for (const slot of slots) for (const job of [...slot.jobs.values()]) this.settle(job, error);
    await Promise.all(slots.map((s) => s.child.retire()));
  }

  /** The DecoderBusyError an upload opened now would get (every stream taken, wait queue full), or null. */
  refusal(): DecoderBusyError | null {
    if (this.queue.size < this.maxQueue || this.hasRoom()) return null;
    const capacity = this.size * this.streamsPerWorker;
    return new DecoderBusyError(Math.max(1, Math.ceil((this.avgJobMs * (this.queue.size + 1)) / capacity / 1000)));
  }

  private hasRoom(): boolean {
    return [...this.slots].some((s) => s.ready && s.jobs.size < this.streamsPerWorker);
  }

  /** Hands queued jobs (in their fair turn) to the least busy ready children; starts a child when every one has work. */
  private pump(): void {
    if (this.closed) return;
    while (this.queue.size) {
      const free = [...this.slots].filter((s) => s.ready && s.jobs.size < this.streamsPerWorker).sort((a, b) => a.jobs.size - b.jobs.size)[0];
      if (!free) break;
      this.dispatch(free, this.queue.shift()!);
    }
    const starting = [...this.slots].some((s) => !s.ready);
    const allBusy = [...this.slots].every((s) => s.jobs.size > 0);
    if (!starting && allBusy && this.slots.size < this.size && (this.queue.size > 0 || this.slots.size > 0)) this.spawn();
  }

  private spawn(): void {
    const handlers = { message: (reply: ChildReply) => this.onReply(slot, reply), exit: (exit: DecoderExit) => this.onCrash(slot, exit) };
    const slot: Slot = { child: new DecoderProcess(this.memoryMb, handlers), ready: false, jobs: new Map(), current: undefined, lastHeard: performance.now() };
    this.slots.add(slot);
  }

  private dispatch(slot: Slot, job: Job): void {
    job.slot = slot;
    job.startedAt = performance.now();
    slot.jobs.set(job.id, job);
    slot.lastHeard = performance.now();
    slot.child.setBusy(true);
    const source = job.input instanceof Uint8Array ? { bytes: job.input } : { path: job.input.path };
    slot.child.send({ type: 'start', id: job.id, ...source, options: job.options, credit: this.credit, budgetMs: this.timeoutMs } satisfies PoolToChild);
    job.input = EMPTY; // the child has its copy; ours can be collected
  }

  private onReply(slot: Slot, reply: ChildReply): void {
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
    job.slot.child.send({ type: 'credit', id: job.id, amount: 1 } satisfies PoolToChild);
  }

  private cancel(job: Job): void {
    if (job.cancelled || !job.slot || !job.slot.jobs.has(job.id)) return;
    job.cancelled = true;
    job.slot.child.send({ type: 'cancel', id: job.id } satisfies PoolToChild);
  }

  private abort(job: Job): void {
    if (this.queue.remove(job)) {
      this.settle(job, abortError());
    } else if (job.stream) {
      job.stream.close(abortError());
    } else {
      job.opened.reject(abortError());
      this.cancel(job);
    }
  }

  /** The job is over (its child said so, or the child is gone): fail it with `error` if given, free its place. */
  private settle(job: Job, error?: Error): void {
    if (error) {
      if (job.stream) job.stream.fail(error);
      else job.opened.reject(error);
    }
    if (job.onAbort) job.signal?.removeEventListener('abort', job.onAbort);
    const slot = job.slot;
    if (slot?.jobs.delete(job.id)) {
      this.avgJobMs = this.avgJobMs * 0.8 + (performance.now() - job.startedAt) * 0.2;
      if (slot.jobs.size === 0 && !this.closed) slot.child.setBusy(false);
    }
    this.pump();
  }

  /** A child with work to do that has said nothing for timeoutMs is stuck in one step. */
  private checkStuck(): void {
    const now = performance.now();
    for (const slot of this.slots) {
      const working = [...slot.jobs.values()].some((j) => j.cancelled || j.unread < this.credit);
      if (!slot.ready || !working || now - slot.lastHeard <= this.timeoutMs) continue;
      const seconds = this.timeoutMs / 1000;
      this.retire(slot, () => new AudioDecodeError('timeout', `Decoding the audio took longer than ${seconds} s and was stopped.`));
    }
  }

  /** Kills a busy child over its allowance: its own memory plus twice the uploads it holds. Its exit does the rest. */
  private checkMemory(): void {
    for (const slot of this.slots) {
      if (slot.jobs.size === 0) continue;
      const held = [...slot.jobs.values()].reduce((n, j) => n + j.size, 0);
      slot.child.enforceMemory(this.memoryMb * MiB + 2 * held);
    }
  }

  /** The child died (out of memory, killed, crashed): fail its jobs, replace it on demand. */
  private onCrash(slot: Slot, exit: DecoderExit): void {
    if (!this.slots.has(slot)) return; // already retired or closed
    const wasReady = slot.ready;
    const culprit =
      exit.reason === 'memory'
        ? () => new AudioDecodeError('corrupt', 'Decoding this file needed more memory than an upload may use; it was stopped. Send a shorter or simpler file.')
        : () => new AudioDecodeError('corrupt', 'The audio decoder failed on this file.');
    this.retire(slot, culprit);
    if (!wasReady) {
      // It died while starting: queued jobs would only start more children that die the same way.
      const failure = new Error(`decoder process failed to start: ${exit.detail}`);
      for (const job of this.queue.drain()) this.settle(job, failure);
    }
  }

  /**
   * Removes a child: the job it was working on fails with `culprit()`, the others with DecoderRestartedError.
   * A child holding one job was working on that one, even before its first step's announcement arrived (on a
   * loaded machine a 30 ms budget ran out first, and the lone upload was told another upload had restarted
   * the decoder).
   */
  private retire(slot: Slot, culprit: () => Error): void {
    this.slots.delete(slot);
    void slot.child.retire();
    const working = slot.jobs.size === 1 ? [...slot.jobs.keys()][0] : slot.current;
    for (const job of [...slot.jobs.values()]) this.settle(job, job.id === working ? culprit() : new DecoderRestartedError());
    this.pump();
  }
}
