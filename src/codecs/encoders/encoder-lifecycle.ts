/**
 * The StreamingEncoder contract, written once for every format: resampling from the caller's input rate
 * to the format's rate, the open → flushed/closed state machine (push after end rejects, flush twice
 * rejects, close is idempotent and safe mid-stream), and failure handling. Each format supplies only an
 * EncoderCore that turns samples at its own rate into bytes.
 */

import { createResampler, type StreamingResampler } from '../resample.js';
import type { EncoderOptions, FormatInfo, StreamingEncoder } from '../types.js';

/** What a format implements: synchronous, already at `info.sampleRate`, never called after finish/release. */
export interface EncoderCore {
  /** Encodes samples (mono, [-1, 1], any count including 0) and returns the bytes that became ready. */
  encode(samples: Float32Array): Uint8Array;
  /** Pads and encodes whatever is buffered, ends the stream and returns the remaining bytes. */
  finish(): Uint8Array;
  /** Frees native/wasm memory. Called exactly once, after finish() or instead of it. */
  release(): void;
}

type State = 'open' | 'flushed' | 'closed' | 'failed';

const EMPTY = new Uint8Array(0);

export function validateInputRate(options: EncoderOptions): number {
  const rate = options.inputRate;
  if (!Number.isInteger(rate) || rate < 1000 || rate > 384_000) {
    throw new RangeError(`encoder inputRate must be an integer between 1000 and 384000 Hz, got ${String(rate)}`);
  }
  return rate;
}

/** Concatenates byte arrays, skipping the copy when there is only one. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 0) return EMPTY;
  if (parts.length === 1) return parts[0]!;
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * Wraps a core into a StreamingEncoder. If the resampler cannot be created the core is released, so a
 * failed creation leaks nothing.
 */
export async function streamingEncoderFromCore(info: FormatInfo, options: EncoderOptions, core: EncoderCore): Promise<StreamingEncoder> {
  let resampler: StreamingResampler | undefined;
  try {
    const inputRate = validateInputRate(options);
    if (inputRate !== info.sampleRate) resampler = await createResampler(inputRate, info.sampleRate);
  } catch (error) {
    core.release();
    throw error;
  }
  return new LifecycleEncoder(info, core, resampler);
}

class LifecycleEncoder implements StreamingEncoder {
  private state: State = 'open';

  constructor(
    readonly info: FormatInfo,
    private readonly core: EncoderCore,
    private readonly resampler: StreamingResampler | undefined,
  ) {}

  // async so that every misuse surfaces as a rejected promise, never as a synchronous throw.
  async push(samples: Float32Array): Promise<Uint8Array> {
    this.assertOpen('push');
    if (!(samples instanceof Float32Array)) throw new TypeError(`${this.info.format} encoder: push() takes a Float32Array`);
    if (samples.length === 0) return EMPTY;
    return this.guard(() => this.core.encode(this.resampler ? this.resampler.process(samples) : samples));
  }

  async flush(): Promise<Uint8Array> {
    this.assertOpen('flush');
    const bytes = this.guard(() => {
      const tail = this.resampler ? this.resampler.flush() : undefined;
      const last = tail && tail.length > 0 ? this.core.encode(tail) : EMPTY;
      return concatBytes([last, this.core.finish()].filter((part) => part.length > 0));
    });
    this.state = 'flushed';
    this.releaseAll();
    return bytes;
  }

  close(): void {
    if (this.state === 'closed') return;
    const wasFlushed = this.state === 'flushed';
    this.state = 'closed';
    if (!wasFlushed) this.releaseAll();
  }

  private assertOpen(operation: 'push' | 'flush'): void {
    if (this.state === 'open') return;
    const why = this.state === 'flushed' ? 'the stream was already flushed' : this.state === 'closed' ? 'the encoder was closed' : 'an earlier call failed';
    throw new Error(`${this.info.format} encoder: ${operation}() after end: ${why}`);
  }

  /** A codec error leaves the core in an unknown state: fail the encoder and free it at once. */
  private guard(work: () => Uint8Array): Uint8Array {
    try {
      return work();
    } catch (error) {
      this.state = 'failed';
      this.releaseAll();
      throw error;
    }
  }

  private released = false;
  private releaseAll(): void {
    if (this.released) return;
    this.released = true;
    try {
      this.core.release();
    } finally {
      this.resampler?.close();
    }
  }
}
