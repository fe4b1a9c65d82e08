/**
 * The request body as a pull-based async iterable over uWS's push-based `onData`: an AsyncQueue of byte
 * chunks. Chunks are copied (uWS reuses its ArrayBuffers); past the high-water mark the socket is paused,
 * and it is resumed once the consumer has drained half of it, so a slow consumer never makes us buffer an
 * upload without bound.
 *
 * The last chunk never pauses (nothing more is coming to hold back), and a resume that comes after the
 * body's end says so: uWS's resume() arms its 10 s HTTP idle timer, which after the end nothing would
 * reset, so the socket's owner must keep it from closing a request still being worked on (ResponseSink).
 *
 * A reader that stops early (`break`) leaves the rest where it is: the exchange decides, once the handler
 * has answered, whether to drain it or close the connection (discard(), drainRest()).
 */
import { AsyncQueue } from '../primitives/async-queue.js';

export class BodyQueue implements AsyncIterable<Uint8Array> {
  private readonly queue: AsyncQueue<Buffer>;
  private receivedBytes = 0;
  private failed = false;
  private discarding = false;
  private discardedBytes = 0;

  constructor(
    pauseSocket: () => void,
    /** `bodyEnded`: the whole body is in (see the class comment). */
    resumeSocket: (bodyEnded: boolean) => void,
    highWaterBytes = 1024 * 1024,
  ) {
    this.queue = new AsyncQueue<Buffer>({
      label: 'The request body',
      sizeOf: (chunk) => chunk.byteLength,
      highWater: highWaterBytes,
      onPause: pauseSocket,
      onResume: resumeSocket,
    });
  }

  /** Called from uWS onData. */
  push(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.discarding) this.discardedBytes += chunk.byteLength;
    else if (chunk.byteLength > 0) {
      this.receivedBytes += chunk.byteLength;
      this.queue.push(Buffer.from(new Uint8Array(chunk)), { last: isLast });
    }
    if (isLast) this.queue.end(); // an empty last chunk, or one dropped while discarding
    this.drainWaiter?.();
  }

  /** A request with no body: the iterable ends at once. */
  end(): void {
    this.queue.end();
    this.drainWaiter?.();
  }

  /** The connection went away: pending and future reads reject. */
  fail(err: Error): void {
    this.failed = true;
    this.queue.fail(err);
    this.drainWaiter?.();
  }

  /** True once the client has sent the whole body. */
  get complete(): boolean {
    return this.queue.ended;
  }

  get bytesReceived(): number {
    return this.receivedBytes;
  }

  /** Drops what is queued and whatever still arrives (the handler answered without reading it all). */
  discard(): void {
    this.discarding = true;
    this.queue.cancel(); // resumes a paused socket, so that the rest can arrive and be dropped
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
        if (this.complete) finish(true);
        else if (this.failed || this.discardedBytes > limitBytes) finish(false);
      };
      this.drainWaiter();
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    const chunks = this.queue[Symbol.asyncIterator]();
    // No return(): a reader that breaks must not cancel the queue (see the class comment).
    return { next: () => chunks.next() };
  }

  private drainWaiter: (() => void) | null = null;
}
