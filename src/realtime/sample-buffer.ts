/**
 * The session's input audio buffer at 16 kHz, indexed in the session's audio clock: sample n is the n-th
 * 16 kHz sample received since the session began (n / 16 ms). It holds the samples from `start` to `end`;
 * committed or discarded audio is dropped from the front. One growable array, compacted in place, so
 * appending a 20 ms frame allocates nothing once the buffer has grown to the session's working size.
 */
export class SampleBuffer {
  private data = new Float32Array(16_000 * 4);
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

  append(samples: Float32Array): void {
    if (this.length + samples.length > this.data.length) {
      const grown = new Float32Array(Math.max(this.data.length * 2, this.length + samples.length));
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
    this.data.copyWithin(0, n, this.length);
    this.base += n;
    this.length -= n;
  }
}

/** Clock index ↔ milliseconds at 16 kHz. */
export const samplesToMs = (samples: number): number => Math.round(samples / 16);
export const msToSamples = (ms: number): number => Math.round(ms * 16);
