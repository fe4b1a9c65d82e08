/**
 * The request body as a pull-based async iterable over uWS's push-based `onData`. Chunks are copied
 * (uWS reuses its ArrayBuffers) into a bounded queue; past the high-water mark the socket is paused, and
 * it is resumed once the consumer has drained half of it, so a slow consumer never makes us buffer an
 * upload without bound.
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
  private iterated = false;

  constructor(
    private readonly pauseSocket: () => void,
    private readonly resumeSocket: () => void,
    private readonly highWaterBytes = 1024 * 1024,
  ) {}

  /** Called from uWS onData. */
  push(chunk: ArrayBuffer, isLast: boolean): void {
    if (!this.discarding && chunk.byteLength > 0) {
      this.chunks.push(Buffer.from(new Uint8Array(chunk)));
      this.queuedBytes += chunk.byteLength;
      this.receivedBytes += chunk.byteLength;
      if (this.queuedBytes > this.highWaterBytes && !this.paused) {
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
      this.resumeSocket();
    }
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
          this.resumeSocket();
        }
        yield next;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
