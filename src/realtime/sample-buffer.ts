/**
 * The session's input audio buffer at 16 kHz, indexed in the session's audio clock: sample n is the n-th
 * 16 kHz sample received since the session began (n / 16 ms). It holds the samples from `start` to `end`;
 * committed or discarded audio is dropped from the front. One growable array, compacted in place, so
 * appending a 20 ms frame allocates nothing once the buffer has grown to the session's working size.
 *
 * Sized to what the session holds: empty until audio arrives (an idle session, or one that only sends
 * text, holds nothing; 4 s were preallocated before, 256 KB a session, 1.25 GB for 5,000 open sessions),
 * and shrunk when most of it has been dropped, so one long turn does not keep its peak for the session's life.
 */
const MIN_CAPACITY = 16_000; // 1 s
const EMPTY = new Float32Array(0);

export class SampleBuffer {
  private data = EMPTY;
  /** Clock index of data[0]. */
  private base = 0;
  /** Samples held, from data[0]. */
  private length = 0;

  /** Clock index of the first sample held. */
  get start(): number {
    return this.base;
  }

  /** Clock index one past the last sample received (= all samples ever received). */
  get end(): number {
    return this.base + this.length;
  }

  get heldSamples(): number {
    return this.length;
  }

  /** Samples the buffer has room for now (what it costs: 4 bytes each). */
  get capacitySamples(): number {
    return this.data.length;
  }

  append(samples: Float32Array): void {
    if (this.length + samples.length > this.data.length) {
      const grown = new Float32Array(Math.max(MIN_CAPACITY, this.data.length * 2, this.length + samples.length));
      grown.set(this.data.subarray(0, this.length));
      this.data = grown;
    }
    this.data.set(samples, this.length);
    this.length += samples.length;
  }

  /** A copy of the samples in [from, to) (clock indices, clamped to what is held). */
  copy(from: number, to: number): Float32Array {
    const a = Math.max(from, this.base) - this.base;
    const b = Math.min(to, this.end) - this.base;
    return b > a ? this.data.slice(a, b) : new Float32Array(0);
  }

  /** Drops the samples before clock index `index`. */
  dropBefore(index: number): void {
    const n = Math.min(Math.max(0, index - this.base), this.length);
    if (n === 0) return;
    this.base += n;
    this.length -= n;
    const fit = Math.max(MIN_CAPACITY, 2 * this.length);
    if (this.data.length > 4 * fit) {
      // Mostly empty after a long turn: move what is left into an array twice its size (amortized: the
      // copy is of fewer samples than the appends that grew the buffer).
      const smaller = new Float32Array(fit);
      smaller.set(this.data.subarray(n, n + this.length));
      this.data = smaller;
    } else {
      this.data.copyWithin(0, n, n + this.length);
    }
  }
}

/** Clock index ↔ milliseconds at 16 kHz. */
export const samplesToMs = (samples: number): number => Math.round(samples / 16);
export const msToSamples = (ms: number): number => Math.round(ms * 16);
