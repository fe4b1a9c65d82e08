/**
 * The one push→pull queue: a producer that is called (a socket's data callback, a worker's messages, a
 * child process's replies) pushes items, and one consumer pulls them at its own pace as an async iterable.
 * Every stream in Kuma that turns pushes into a pull is one of these, so the rules below hold everywhere:
 *
 * - Order: items come out in the order they were pushed, each exactly once.
 * - Backpressure: each item has a size (`sizeOf`, 1 by default: bytes for a body, 1 per message). Once the
 *   queued size goes above `highWater` the producer is told to pause (`onPause`, and push() answers false);
 *   once a take brings it down to `lowWater` (half the high-water mark by default) it is told to resume
 *   (`onResume`, and `drained()` resolves). Pause and resume come in pairs. The push that ends the stream
 *   (`{ last: true }`) never pauses: nothing more is coming to hold back. onResume says whether the producer
 *   had already ended, for a producer whose resume has side effects then (uWS arms an idle timer).
 * - Ending: end() lets the consumer take what is queued, then see done; end(error) likewise, then the error
 *   (a decode that failed after some windows: those windows are still good). fail(error) is the other kind
 *   of failure: the stream is broken now (the client went away, the job was cancelled), so what is queued
 *   is dropped and every pull, pending or to come, rejects with the error.
 * - Cancel: the consumer leaving (return() on the iterator, a `break`, or cancel()) drops what is queued,
 *   ignores later pushes, releases a paused producer and then tells it to stop (`onCancel`, unless it had
 *   already ended or failed). cancel(reason) makes later pulls reject with `reason` instead of ending.
 * - One consumer: the queue can be iterated once (a second reader would silently split the items).
 *
 * A pull that waits is handed the next item as it is pushed, in the order the pulls were made; the item
 * still counts toward the mark before it is taken, so what the producer is told depends only on the sizes it
 * pushed, not on whether the consumer happened to be waiting.
 */

export interface AsyncQueueOptions<T> {
  /** Names the stream in the error a second reader gets ("The request body"). */
  label?: string;
  /** An item's share of the queued size (bytes, samples); 1 by default. */
  sizeOf?: (item: T) => number;
  /** Queued size above which the producer is told to pause; never by default. */
  highWater?: number;
  /** Queued size at or below which a paused producer is told to resume; half the high-water mark by default. */
  lowWater?: number;
  onPause?: () => void;
  /** `ended`: the producer had already ended when it was resumed. */
  onResume?: (ended: boolean) => void;
  /** An item was taken by the consumer: flow-control credit for a producer on another thread or process. */
  onTake?: (item: T) => void;
  /** The consumer left before the producer ended: stop producing. */
  onCancel?: () => void;
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private queuedSize = 0;
  private isPaused = false;
  private isEnded = false;
  /** The error end(error) delivers after the queued items. */
  private endError: Error | undefined;
  /** What every pull rejects with at once: fail(error) or cancel(reason). */
  private failure: Error | undefined;
  private failedByProducer = false;
  private cancelled = false;
  private iterated = false;
  /** Pulls waiting for an item or the end, oldest first. */
  private readonly pulls: Array<{ resolve(result: IteratorResult<T, undefined>): void; reject(error: unknown): void }> = [];
  private drainWaiters: Array<() => void> = [];
  private readonly highWater: number;
  private readonly lowWater: number;

  constructor(private readonly options: AsyncQueueOptions<T> = {}) {
    this.highWater = options.highWater ?? Infinity;
    this.lowWater = options.lowWater ?? this.highWater / 2;
  }

  /** Items waiting to be taken. */
  get length(): number {
    return this.items.length;
  }

  /** Their total size (see `sizeOf`). */
  get size(): number {
    return this.queuedSize;
  }

  /** Whether the producer was told to pause and not yet to resume. */
  get paused(): boolean {
    return this.isPaused;
  }

  /** Whether the producer has ended (end(), end(error) or a last push): nothing more will be queued. */
  get ended(): boolean {
    return this.isEnded;
  }

  /**
   * Queues `item`; `last` ends the stream after it. Answers whether the producer may go on: false once
   * paused (wait for drained()), and when nothing more is wanted (ended, failed or cancelled). An item
   * pushed after the end, a failure or a cancel is dropped.
   */
  push(item: T, { last = false }: { last?: boolean } = {}): boolean {
    const wanted = !this.isEnded && !this.failure && !this.cancelled;
    if (wanted) {
      this.items.push(item);
      this.queuedSize += this.options.sizeOf?.(item) ?? 1;
      if (!this.isPaused && !last && this.queuedSize > this.highWater) {
        this.isPaused = true;
        this.options.onPause?.();
      }
    }
    if (last) this.end();
    else this.servePulls();
    return wanted && !last && !this.isPaused;
  }

  /** The producer is done: the consumer takes what is queued, then sees done — or `error`, if given. */
  end(error?: Error): void {
    if (this.isEnded) return;
    this.isEnded = true;
    this.endError = error;
    this.servePulls();
  }

  /** The stream is broken: what is queued is dropped, and every pull from now on rejects with `error`. */
  fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    this.failedByProducer = true;
    this.drop();
    // The pause stays: nothing was taken, and a producer that failed has nothing to resume (cancel() releases it).
    this.servePulls();
    this.wakeDrains();
  }

  /**
   * The consumer is gone: drops what is queued and what comes later, resumes a paused producer (nothing
   * holds it back any more), then tells it to stop unless it had finished. Later pulls see done, or reject
   * with `reason`.
   */
  cancel(reason?: Error): void {
    if (this.cancelled) return;
    this.cancelled = true;
    if (reason && !this.failure) this.failure = reason;
    this.drop();
    this.resumeIfPaused();
    if (!this.isEnded && !this.failedByProducer) this.options.onCancel?.();
    this.servePulls();
    this.wakeDrains();
  }

  /** Resolves once the producer may push again: at once unless paused, or once nothing more is wanted. */
  drained(): Promise<void> {
    if (!this.isPaused || this.failure || this.cancelled) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** The pull: the next item, done after the end, or the failure. The iterator is this plus return() = cancel(). */
  next(): Promise<IteratorResult<T, undefined>> {
    if (this.pulls.length === 0) {
      try {
        const ready = this.poll();
        if (ready) return Promise.resolve(ready);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return new Promise((resolve, reject) => this.pulls.push({ resolve, reject }));
  }

  [Symbol.asyncIterator](): AsyncIterator<T, undefined> {
    if (this.iterated) throw new Error(`${this.options.label ?? 'A queue'} can be read only once`);
    this.iterated = true;
    return {
      next: () => this.next(),
      return: async () => {
        this.cancel();
        return DONE;
      },
    };
  }

  private take(): T {
    const item = this.items.shift()!;
    this.queuedSize -= this.options.sizeOf?.(item) ?? 1;
    this.options.onTake?.(item);
    if (this.queuedSize <= this.lowWater) this.resumeIfPaused();
    return item;
  }

  private drop(): void {
    this.items.length = 0;
    this.queuedSize = 0;
  }

  private resumeIfPaused(): void {
    if (!this.isPaused) return;
    this.isPaused = false;
    this.options.onResume?.(this.isEnded);
    this.wakeDrains();
  }

  /** What a pull gets now: the failure (thrown), done, an item, or the end; undefined while it must wait. */
  private poll(): IteratorResult<T, undefined> | undefined {
    if (this.failure) throw this.failure;
    if (this.cancelled) return DONE;
    if (this.items.length > 0) return { done: false, value: this.take() };
    if (!this.isEnded) return undefined;
    if (this.endError) throw this.endError;
    return DONE;
  }

  /**
   * Settles waiting pulls, oldest first, for as long as there is something to give them. Each pull leaves
   * the line before its take, whose callbacks may push again (and so serve the pulls behind it).
   */
  private servePulls(): void {
    while (this.pulls.length > 0) {
      const pull = this.pulls.shift()!;
      let ready: IteratorResult<T, undefined> | undefined;
      try {
        ready = this.poll();
      } catch (error) {
        pull.reject(error);
        continue;
      }
      if (!ready) {
        this.pulls.unshift(pull);
        return;
      }
      pull.resolve(ready);
    }
  }

  private wakeDrains(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const wake of waiters) wake();
  }
}
