/**
 * The consumer's handle on one upload being decoded in the DecoderPool: what the file is (`header`), then
 * its 16 kHz (or whatever rate was asked) windows as an async iterable that can be read once, then the
 * totals (`summary`) once the last window has been taken.
 *
 * Flow control: the worker decodes ahead by at most the pool's credit (a few windows); each window taken
 * here gives one credit back. A consumer that stops reading pauses the decode, one that leaves
 * (`return()`, `close()`) cancels it. A failure after some windows is thrown after those windows, in order.
 */
import { AsyncQueue } from '../../primitives/async-queue.js';
import type { DecodeSummary, StreamHeader } from './decode-stream.js';

export interface StreamControl {
  /** One window was taken: the worker may decode one more. */
  credit(): void;
  /** The consumer is gone: stop decoding. */
  cancel(): void;
}

export class DecodedStream implements AsyncIterable<Float32Array> {
  private readonly windows: AsyncQueue<Float32Array>;
  private result: DecodeSummary | null = null;

  constructor(
    readonly header: StreamHeader,
    control: StreamControl,
  ) {
    this.windows = new AsyncQueue<Float32Array>({
      label: 'A decoded stream',
      // Once the worker has sent its last message it decodes nothing more: no credit to give back.
      onTake: () => {
        if (!this.windows.ended) control.credit();
      },
      onCancel: () => control.cancel(),
    });
  }

  /** Duration, rates and channels: set once the worker has decoded the last window. */
  get summary(): DecodeSummary | null {
    return this.result;
  }

  /** Windows decoded and waiting to be read (at most the pool's credit). */
  get buffered(): number {
    return this.windows.length;
  }

  /** Pool side: a window arrived. */
  push(samples: Float32Array): void {
    this.windows.push(samples);
  }

  /** Pool side: the last window has been sent. */
  end(summary: DecodeSummary): void {
    this.result = summary;
    this.windows.end();
  }

  /** Pool side: decoding failed (after the windows already pushed). */
  fail(error: Error): void {
    this.windows.end(error);
  }

  /**
   * Stops reading: the decode is cancelled if it is still running. With `reason`, a read in progress
   * or to come rejects with it (an aborted request); without, reads end as if the stream had ended.
   */
  close(reason?: Error): void {
    this.windows.cancel(reason);
  }

  [Symbol.asyncIterator](): AsyncIterator<Float32Array> {
    return this.windows[Symbol.asyncIterator]();
  }
}
