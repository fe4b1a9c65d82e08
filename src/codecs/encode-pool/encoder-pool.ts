/**
 * The encoder worker pool: streaming encoders whose push() costs the I/O thread more than a few hundred µs
 * per 0.1 s slice (load-tests/codecs/slice-cost.ts) run in worker threads instead, behind the same
 * StreamingEncoder interface (pooled-encoder.ts).
 *
 * - A stream is pinned to one worker (its encoder's state lives there) — the one with the fewest open
 *   streams when it opens — and its requests run there in order.
 * - Each worker has at most `inFlightPerWorker` requests outstanding (two: one runs while the next
 *   crosses the thread boundary); the rest wait in the pool, where stream-scheduler.ts decides the order:
 *   streams that have delivered nothing yet first, then round-robin.
 * - Bounded: a stream may have `maxPendingPerStream` requests waiting (the pipeline awaits each push, so
 *   it has one); one more is refused with a clear error and the stream goes on.
 * - A worker that dies fails only its own streams (EncoderThreadError) and is replaced at once.
 * - Samples are copied once into a buffer that is transferred; output bytes come back transferred.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../../threads/spawn-worker.js';
import { EncoderThreadError, type EncoderOptions, type SpeechFormat } from '../types.js';
import { copyForTransfer, reviveError, type PoolRequest, type WorkerData, type WorkerReply } from './protocol.js';
import { StreamScheduler, type ScheduledStream } from './stream-scheduler.js';

export interface EncoderPoolOptions {
  /** Worker threads (at least 1). */
  size: number;
  /** Requests one worker has outstanding at a time; default 2. */
  inFlightPerWorker?: number;
  /** Requests one stream may have waiting; default 8. */
  maxPendingPerStream?: number;
  /** Formats each worker loads (WASM compile, first instance) before it takes requests. */
  warmFormats?: readonly SpeechFormat[];
  /** The worker module; tests substitute one that can be made to crash. */
  workerUrl?: URL;
}

type Request = Exclude<PoolRequest, { type: 'close' | 'stats' }>;
type RequestBody = Request extends infer R ? (R extends Request ? Omit<R, 'stream' | 'seq'> : never) : never;

interface Task {
  body: RequestBody;
  transfer: ArrayBuffer[];
  resolve(bytes: Uint8Array): void;
  reject(error: Error): void;
}

/** The pool's side of one stream. */
export interface PoolStream extends ScheduledStream<Task> {
  readonly id: number;
  readonly slot: Slot;
  /** Closed by its owner: nothing more is sent, answers still on their way resolve empty. */
  closed: boolean;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  streams: Set<PoolStream>;
  inFlight: Map<number, { stream: PoolStream; task: Task }>;
  scheduler: StreamScheduler<PoolStream, Task>;
  statsWaiters: Map<number, (count: number) => void>;
}

/** One call too many waiting on a stream: that call is refused, the stream goes on. */
export class EncoderBacklogError extends Error {
  constructor(limit: number) {
    super(`encoder: more than ${limit} calls waiting on one stream; await push() before pushing more`);
    this.name = 'EncoderBacklogError';
  }
}

const WORKER_URL = new URL(`./encoder-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
const EMPTY = new Uint8Array(0);

export class EncoderPool {
  readonly size: number;
  private readonly inFlightPerWorker: number;
  private readonly maxPendingPerStream: number;
  private readonly workerUrl: URL;
  private readonly warmFormats: readonly SpeechFormat[];
  private readonly slots = new Set<Slot>();
  private nextStream = 1;
  private nextSeq = 1;
  private closed = false;

  constructor(options: EncoderPoolOptions) {
    this.size = Math.max(1, Math.floor(options.size));
    this.inFlightPerWorker = Math.max(1, Math.floor(options.inFlightPerWorker ?? 2));
    this.maxPendingPerStream = Math.max(1, Math.floor(options.maxPendingPerStream ?? 8));
    this.workerUrl = options.workerUrl ?? WORKER_URL;
    this.warmFormats = options.warmFormats ?? [];
  }

  /** Starts every worker now (server start), so the first stream does not wait for a thread to boot. */
  warm(): void {
    while (!this.closed && this.slots.size < this.size) this.spawn();
  }

  /** Opens a stream on the least loaded worker; resolves once its encoder exists there. */
  async open(format: SpeechFormat, options: EncoderOptions): Promise<PoolStream> {
    if (this.closed) throw new EncoderThreadError('the encoder pool is closed');
    this.warm();
    const slot = [...this.slots].sort((a, b) => a.streams.size - b.streams.size)[0]!;
    const stream: PoolStream = {
      id: this.nextStream++,
      slot,
      pending: [],
      started: false,
      queued: false,
      closed: false,
      ...(options.account !== undefined ? { account: options.account } : {}),
    };
    slot.streams.add(stream);
    try {
      await this.submit(stream, { type: 'open', format, inputRate: options.inputRate, ...(options.variant ? { variant: options.variant } : {}) });
    } catch (error) {
      slot.streams.delete(stream);
      throw error;
    }
    return stream;
  }

  push(stream: PoolStream, samples: Float32Array): Promise<Uint8Array> {
    const { value, transfer } = copyForTransfer(samples);
    return this.submit(stream, { type: 'push', samples: value }, transfer);
  }

  /** Ends the stream: the worker flushes and frees the encoder. */
  async flush(stream: PoolStream): Promise<Uint8Array> {
    try {
      return await this.submit(stream, { type: 'flush' });
    } finally {
      stream.slot.streams.delete(stream);
    }
  }

  /** Frees the stream at once: requests not yet sent resolve empty, the worker drops the encoder. */
  closeStream(stream: PoolStream): void {
    if (stream.closed) return;
    stream.closed = true;
    for (const task of stream.slot.scheduler.drop(stream)) task.resolve(EMPTY);
    const { slot } = stream;
    if (slot.streams.delete(stream) || [...slot.inFlight.values()].some((f) => f.stream === stream)) {
      slot.worker.postMessage({ type: 'close', stream: stream.id } satisfies PoolRequest);
    }
  }

  /** Streams open, requests waiting and outstanding: for metrics and tests. */
  stats(): { workers: number; streams: number; waiting: number; inFlight: number } {
    const slots = [...this.slots];
    return {
      workers: slots.length,
      streams: slots.reduce((n, s) => n + s.streams.size, 0),
      waiting: slots.reduce((n, s) => n + [...s.streams].reduce((m, st) => m + st.pending.length, 0), 0),
      inFlight: slots.reduce((n, s) => n + s.inFlight.size, 0),
    };
  }

  /** Encoders the workers hold, as they report it (a leak shows here). */
  async workerEncoders(): Promise<number> {
    const counts = await Promise.all(
      [...this.slots].map(
        (slot) =>
          new Promise<number>((resolve) => {
            const seq = this.nextSeq++;
            slot.statsWaiters.set(seq, resolve);
            slot.worker.postMessage({ type: 'stats', seq } satisfies PoolRequest);
          }),
      ),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const slots = [...this.slots];
    for (const slot of slots) this.retire(slot, 'the encoder pool was closed');
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  private submit(stream: PoolStream, body: RequestBody, transfer: ArrayBuffer[] = []): Promise<Uint8Array> {
    if (stream.closed) return Promise.resolve(EMPTY);
    if (!this.slots.has(stream.slot)) return Promise.reject(new EncoderThreadError('its worker is gone'));
    if (stream.pending.length >= this.maxPendingPerStream) {
      return Promise.reject(new EncoderBacklogError(this.maxPendingPerStream));
    }
    return new Promise<Uint8Array>((resolve, reject) => {
      stream.slot.scheduler.enqueue(stream, { body, transfer, resolve, reject });
      this.pump(stream.slot);
    });
  }

  /** Sends the scheduler's next requests while the worker has room. */
  private pump(slot: Slot): void {
    while (slot.ready && slot.inFlight.size < this.inFlightPerWorker) {
      const next = slot.scheduler.next();
      if (!next) break;
      const seq = this.nextSeq++;
      slot.inFlight.set(seq, { stream: next.stream, task: next.request });
      slot.worker.ref(); // busy: keep the process alive until the answer comes
      const message = { ...next.request.body, stream: next.stream.id, seq } as PoolRequest;
      slot.worker.postMessage(message, next.request.transfer);
    }
  }

  private onReply(slot: Slot, reply: WorkerReply): void {
    if (reply.type === 'ready') {
      slot.ready = true;
      this.pump(slot);
      return;
    }
    if (reply.type === 'stats') {
      slot.statsWaiters.get(reply.seq)?.(reply.openEncoders);
      slot.statsWaiters.delete(reply.seq);
      return;
    }
    const flight = slot.inFlight.get(reply.seq);
    if (!flight) return;
    slot.inFlight.delete(reply.seq);
    if (slot.inFlight.size === 0) slot.worker.unref();
    const { stream, task } = flight;
    if (stream.closed) task.resolve(EMPTY);
    else if (reply.type === 'done') {
      if (reply.bytes.length > 0) stream.started = true;
      task.resolve(reply.bytes);
    } else {
      // The encoder failed and freed itself in the worker: fail what else this stream had queued.
      slot.streams.delete(stream);
      const error = reviveError(reply.error);
      task.reject(error);
      for (const queued of slot.scheduler.drop(stream)) queued.reject(error);
    }
    this.pump(slot);
  }

  private spawn(): void {
    const slot: Slot = {
      worker: spawnWorker(this.workerUrl, { workerData: { warmFormats: this.warmFormats } satisfies WorkerData }),
      ready: false,
      streams: new Set(),
      inFlight: new Map(),
      scheduler: new StreamScheduler(),
      statsWaiters: new Map(),
    };
    this.slots.add(slot);
    slot.worker.unref(); // an idle pool must not keep the process alive; pump() refs it while busy
    slot.worker.on('message', (reply: WorkerReply) => this.onReply(slot, reply));
    slot.worker.on('error', (error: Error) => this.onCrash(slot, error.message));
    slot.worker.on('exit', (code) => this.onCrash(slot, `exit code ${code}`));
  }

  private onCrash(slot: Slot, detail: string): void {
    if (!this.slots.has(slot)) return; // already retired
    const wasReady = slot.ready;
    this.retire(slot, `encoder worker died: ${detail}`);
    // Replace it, unless it died while starting: a new one would most likely die the same way (the next
    // open() tries again).
    if (wasReady && !this.closed) this.spawn();
  }

  /** Removes a worker and fails every stream pinned to it. */
  private retire(slot: Slot, detail: string): void {
    this.slots.delete(slot);
    slot.worker.removeAllListeners('message');
    void slot.worker.terminate();
    const error = () => new EncoderThreadError(detail);
    for (const { task } of slot.inFlight.values()) task.reject(error());
    slot.inFlight.clear();
    for (const stream of slot.streams) for (const task of slot.scheduler.drop(stream)) task.reject(error());
    slot.streams.clear();
    for (const resolve of slot.statsWaiters.values()) resolve(0);
  }
}
