/**
 * Worker side of a job's streamed input: `input` messages queue here until the runner takes them, as an
 * async iterable it reads once. Taking an item calls `onTaken` (the worker sends the main thread one
 * input credit back), so the queue never holds more than the main thread's INPUT_CREDIT items. An abort
 * of the job wakes a runner waiting for input with EngineCancelledError.
 */
import { EngineCancelledError } from '../errors.js';

export class StreamedInput implements AsyncIterable<unknown> {
  private readonly items: unknown[] = [];
  private ended = false;
  private read = false;
  private wake: (() => void) | null = null;

  constructor(
    private readonly signal: AbortSignal,
    private readonly onTaken: () => void,
  ) {
    signal.addEventListener('abort', () => this.notify(), { once: true });
  }

  push(item: unknown): void {
    this.items.push(item);
    this.notify();
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    if (this.read) throw new Error('A job input stream can be read only once');
    this.read = true;
    return {
      next: async (): Promise<IteratorResult<unknown>> => {
        for (;;) {
          if (this.signal.aborted) throw new EngineCancelledError();
          if (this.items.length) {
            const value = this.items.shift();
            this.onTaken();
            return { done: false, value };
          }
          if (this.ended) return { done: true, value: undefined };
          await new Promise<void>((resolve) => (this.wake = resolve));
        }
      },
    };
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
