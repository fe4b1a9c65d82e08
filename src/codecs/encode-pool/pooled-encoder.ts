/**
 * A StreamingEncoder whose codec runs in the encoder worker pool: the same contract as an in-thread
 * encoder (encoder-lifecycle.ts) — push after flush or close rejects, close is idempotent and safe at any
 * time, a codec error fails the stream — and the same bytes, each push resolving with exactly the bytes
 * that push produced (nothing is held back in the pool, so encoderLagSamples() in the pipeline holds).
 */
import { formatInfo } from '../formats.js';
import type { EncoderOptions, FormatInfo, SpeechFormat, StreamingEncoder } from '../types.js';
import { validateInputRate } from '../encoders/encoder-lifecycle.js';
import { EncoderBacklogError, type EncoderPool, type PoolStream } from './encoder-pool.js';

type State = 'open' | 'flushed' | 'closed' | 'failed';

const EMPTY = new Uint8Array(0);

export async function createPooledEncoder(pool: EncoderPool, format: SpeechFormat, options: EncoderOptions): Promise<StreamingEncoder> {
  // Checked here too so that a bad rate fails before a round trip, with the in-thread encoder's message.
  validateInputRate(options);
  const info = formatInfo(format, options.variant);
  if (!info) throw new Error(`no encoder for format ${JSON.stringify(format)}`);
  return new PooledEncoder(info, pool, await pool.open(format, options));
}

class PooledEncoder implements StreamingEncoder {
  private state: State = 'open';

  constructor(
    readonly info: FormatInfo,
    private readonly pool: EncoderPool,
    private readonly stream: PoolStream,
  ) {}

  async push(samples: Float32Array): Promise<Uint8Array> {
    this.assertOpen('push');
    if (!(samples instanceof Float32Array)) throw new TypeError(`${this.info.format} encoder: push() takes a Float32Array`);
    if (samples.length === 0) return EMPTY;
    return this.guard(this.pool.push(this.stream, samples));
  }

  async flush(): Promise<Uint8Array> {
    this.assertOpen('flush');
    this.state = 'flushed';
    return this.guard(this.pool.flush(this.stream));
  }

  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.pool.closeStream(this.stream);
  }

  private assertOpen(operation: 'push' | 'flush'): void {
    if (this.state === 'open') return;
    const why = this.state === 'flushed' ? 'the stream was already flushed' : this.state === 'closed' ? 'the encoder was closed' : 'an earlier call failed';
    throw new Error(`${this.info.format} encoder: ${operation}() after end: ${why}`);
  }

  /** A codec or worker failure ends the stream; a call refused by the pool's bound does not. */
  private async guard(result: Promise<Uint8Array>): Promise<Uint8Array> {
    try {
      return await result;
    } catch (error) {
      if (!(error instanceof EncoderBacklogError) && this.state !== 'closed') {
        this.state = 'failed';
        this.pool.closeStream(this.stream);
      }
      throw error;
    }
  }
}
