/**
 * The consumer's handle on one upload being decoded in the DecoderPool: what the file is (`header`), then
 * its 16 kHz (or whatever rate was asked) windows as an async iterable that can be read once, then the
 * totals (`summary`) once the last window has been taken.
 *
 * Flow control: the worker decodes ahead by at most the pool's credit (a few windows); each window taken
 * here gives one credit back. A consumer that stops reading pauses the decode, one that leaves
 * (`return()`, `close()`) cancels it. A failure after some windows is thrown after those windows, in order.
 */
import type { DecodeSummary, StreamHeader } from './decode-stream.js';

export interface StreamControl {
  /** One window was taken: the worker may decode one more. */
  credit(): void;
  /** The consumer is gone: stop decoding. */
  cancel(): void;
}

export class DecodedStream implements AsyncIterable<Float32Array> {
  private readonly windows: Float32Array[] = [];
  private error: Error | null = null;
  private result: DecodeSummary | null = null;
  private closedWith: 'done' | Error | null = null;
  private read = false;
  private wake: (() => void) | null = null;

  constructor(
    readonly header: StreamHeader,
    private readonly control: StreamControl,
  ) {}

  /** Duration, rates and channels: set once the worker has decoded the last window. */
  get summary(): DecodeSummary | null {
    return this.result;
  }

  /** Windows decoded and waiting to be read (at most the pool's credit). */
  get buffered(): number {
    return this.windows.length;
  }

  /** Whether the worker has sent its last message: the summary or the failure. */
  private get settled(): boolean {
    return this.result !== null || this.error !== null;
  }

  /** Pool side: a window arrived. */
  push(samples: Float32Array): void {
    if (this.closedWith) return;
    this.windows.push(samples);
    this.notify();
  }

  /** Pool side: the last window has been sent. */
  end(summary: DecodeSummary): void {
    this.result = summary;
    this.notify();
  }

  /** Pool side: decoding failed (after the windows already pushed). */
  fail(error: Error): void {
    this.error ??= error;
    this.notify();
  }

  /**
   * Stops reading: the decode is cancelled if it is still running. With `reason`, a read in progress
   * or to come rejects with it (an aborted request); without, reads end as if the stream had ended.
   */
  close(reason?: Error): void {
    if (this.closedWith) return;
    this.closedWith = reason ?? 'done';
    this.windows.length = 0;
    if (!this.settled) this.control.cancel();
    this.notify();
  }

  [Symbol.asyncIterator](): AsyncIterator<Float32Array> {
    if (this.read) throw new Error('A decoded stream can be read only once');
    this.read = true;
    return {
      next: async (): Promise<IteratorResult<Float32Array>> => {
        for (;;) {
          if (this.closedWith === 'done') return { done: true, value: undefined };
          if (this.closedWith) throw this.closedWith;
          const window = this.windows.shift();
          if (window) {
            if (!this.settled) this.control.credit();
            return { done: false, value: window };
          }
          if (this.error) throw this.error;
          if (this.result) return { done: true, value: undefined };
          await new Promise<void>((resolve) => (this.wake = resolve));
        }
      },
      return: async (): Promise<IteratorResult<Float32Array>> => {
        this.close();
        return { done: true, value: undefined };
      },
    };
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
