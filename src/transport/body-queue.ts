/**
 * The request body as a pull-based async iterable over uWS's push-based `onData`. Chunks are copied
 * (uWS reuses its ArrayBuffers) into a bounded queue; past the high-water mark the socket is paused, and
 * it is resumed once the consumer has drained half of it, so a slow consumer never makes us buffer an
 * upload without bound.
 *
 * The last chunk never pauses (nothing more is coming to hold back), and a resume that comes after the
 * body's end says so: uWS's resume() arms its 10 s HTTP idle timer, which after the end nothing would
 * reset, so the socket's owner must keep it from closing a request still being worked on (ResponseSink).
 */

export class BodyQueue implements AsyncIterable<Uint8Array> {
  private readonly chunks: Buffer[] = [];
  private queuedBytes = 0;
  private receivedBytes = 0;
  private ended = false;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private paused = false;
  private discarding = false;
  private discardedBytes = 0;
  private iterated = false;

  constructor(
    private readonly pauseSocket: () => void,
    /** `bodyEnded`: the whole body is in (see the class comment). */
    private readonly resumeSocket: (bodyEnded: boolean) => void,
    private readonly highWaterBytes = 1024 * 1024,
  ) {}

  /** Called from uWS onData. */
  push(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.discarding) this.discardedBytes += chunk.byteLength;
    else if (chunk.byteLength > 0) {
      this.chunks.push(Buffer.from(new Uint8Array(chunk)));
      this.queuedBytes += chunk.byteLength;
      this.receivedBytes += chunk.byteLength;
      if (this.queuedBytes > this.highWaterBytes && !this.paused && !isLast) {
        this.paused = true;
        this.pauseSocket();
      }
    }
    if (isLast) this.ended = true;
    this.notify();
  }

  /** A request with no body: the iterable ends at once. */
  end(): void {
    this.ended = true;
    this.notify();
  }

  /** The connection went away: pending and future reads reject. */
  fail(err: Error): void {
    this.failure ??= err;
    this.notify();
  }

  /** True once the client has sent the whole body. */
  get complete(): boolean {
    return this.ended;
  }

  get bytesReceived(): number {
    return this.receivedBytes;
  }

  /** Drops what is queued and whatever still arrives (the handler answered without reading it all). */
  discard(): void {
    this.discarding = true;
    this.chunks.length = 0;
    this.queuedBytes = 0;
    if (this.paused) {
      this.paused = false;
      this.resumeSocket(this.ended);
    }
  }

  /**
   * Reads and drops the rest of the body, so that an answer sent before the body was read (401, 402, 413,
   * 503…) reaches the client: closing a socket that still has unread upload data makes the kernel reset the
   * connection, and Node's fetch/undici clients then report EPIPE instead of the status. Bounded: resolves
   * false once `limitBytes` more have been dropped, after `timeoutMs`, or when the client goes away; true
   * when the whole body has arrived (the connection may then be kept alive).
   */
  drainRest(limitBytes: number, timeoutMs: number): Promise<boolean> {
    this.discard();
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => finish(false), timeoutMs);
      const finish = (complete: boolean) => {
        clearTimeout(timer);
        this.drainWaiter = null;
        resolve(complete);
      };
      this.drainWaiter = () => {
        if (this.ended) finish(true);
        else if (this.failure || this.discardedBytes > limitBytes) finish(false);
      };
      this.drainWaiter();
    });
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.iterated) throw new Error('The request body can be read only once');
    this.iterated = true;
    while (true) {
      if (this.failure) throw this.failure;
      const next = this.chunks.shift();
      if (next) {
        this.queuedBytes -= next.byteLength;
        if (this.paused && this.queuedBytes <= this.highWaterBytes / 2) {
          this.paused = false;
          this.resumeSocket(this.ended);
        }
        yield next;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private drainWaiter: (() => void) | null = null;

  private notify(): void {
    this.drainWaiter?.();
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
