/**
 * The order in which one encoder worker gets its streams' requests. A stream that has not yet delivered
 * any bytes goes ahead of streams that have (for a listener, the first bytes are what count: a slice of a
 * stream already playing can wait a millisecond, a stream that has not started is silence). Within each
 * class, accounts take turns, and an account's streams take turns, one request per turn — so neither a
 * stream that queued many pushes nor an account with many streams can hold the worker while others wait
 * (bench:fairness: with per-stream turns, account A's 32 streams took 32 of every 33 turns, and each of
 * B's later slices waited a whole rotation). A stream's own requests keep their order.
 */

import { RoundRobinQueue } from '../decode/round-robin-queue.js';

export interface ScheduledStream<T> {
  /** The stream's requests not yet sent, oldest first. */
  readonly pending: T[];
  /** True once the stream has delivered bytes: its requests are continuations from then on. */
  started: boolean;
  /** Set while the stream sits in one of the scheduler's queues. */
  queued: boolean;
  /** Whose stream this is (turns are shared per account); streams without one share a turn. */
  readonly account?: string;
}

export class StreamScheduler<S extends ScheduledStream<T>, T> {
  /** Streams waiting per class, by account: accounts in turn, each account's streams in turn. */
  private readonly firsts = new RoundRobinQueue<S>();
  private readonly continuations = new RoundRobinQueue<S>();

  /** Adds a request to its stream and puts the stream in line if it was not. */
  enqueue(stream: S, request: T): void {
    stream.pending.push(request);
    this.line(stream);
  }

  /** The next request to send (and its stream), or undefined when nothing waits. */
  next(): { stream: S; request: T } | undefined {
    for (;;) {
      const stream = this.firsts.shift() ?? this.continuations.shift();
      if (!stream) return undefined;
      stream.queued = false;
      const request = stream.pending.shift();
      if (request === undefined) continue; // emptied by drop() while in line
      // Back of the line for its next request: one request per turn.
      this.line(stream);
      return { stream, request };
    }
  }

  /** Removes and returns a stream's pending requests (the stream closed or failed). */
  drop(stream: S): T[] {
    return stream.pending.splice(0);
  }

  get waiting(): number {
    return this.firsts.size + this.continuations.size;
  }

  private line(stream: S): void {
    if (stream.queued || stream.pending.length === 0) return;
    stream.queued = true;
    (stream.started ? this.continuations : this.firsts).push(stream.account ?? '', stream);
  }
}
