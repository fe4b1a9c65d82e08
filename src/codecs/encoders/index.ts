/**
 * The encoder registry: one createEncoder() for all 13 speech formats (on this thread or in the encoder
 * worker pool), and encodeStream(), which turns a pull-based stream of PCM chunks into a stream of encoded
 * bytes with flush at the end and the encoder always closed — on success, error, consumer break, or abort.
 */

import type { EncoderOptions, SpeechFormat, StreamingEncoder } from '../types.js';
import { createPooledEncoder } from '../encode-pool/pooled-encoder.js';
import { POOLED_FORMATS } from '../encode-pool/shared-pool.js';
import { createInThreadEncoder } from './in-thread.js';
import { STANDALONE_ENCODERS, type EncoderSource } from './speech-encoders.js';

/**
 * An encoder for `format`. The formats that cost the I/O thread more than a few hundred µs per 0.1 s
 * slice run in the encoder worker pool (same interface, same bytes); the rest on this thread. `encoders`
 * are the server's pools (speech-encoders.ts); code outside a server leaves them out.
 */
export async function createEncoder(format: SpeechFormat, options: EncoderOptions, encoders: EncoderSource = STANDALONE_ENCODERS): Promise<StreamingEncoder> {
  const pool = POOLED_FORMATS.has(format) ? encoders.pool : null;
  return pool ? createPooledEncoder(pool, format, options) : createInThreadEncoder(format, options, () => encoders.aac());
}

const ABORTED = Symbol('aborted');

/**
 * Encodes `pcm` chunk by chunk, yielding each non-empty output as soon as the codec produces it, then the
 * flushed tail. The encoder is closed in every case. An abort ends the stream promptly with the signal's
 * reason even while waiting for the next PCM chunk, and asks the PCM source to stop (its return()).
 */
export async function* encodeStream(encoder: StreamingEncoder, pcm: AsyncIterable<Float32Array>, signal?: AbortSignal): AsyncIterable<Uint8Array> {
  const iterator = pcm[Symbol.asyncIterator]();
  let sourceDone = false;
  let onAbort: (() => void) | undefined;
  const aborted = signal
    ? new Promise<typeof ABORTED>((resolve) => {
        onAbort = () => resolve(ABORTED);
        signal.addEventListener('abort', onAbort, { once: true });
      })
    : undefined;
  try {
    for (;;) {
      signal?.throwIfAborted();
      const step = iterator.next();
      // If the abort wins the race, a later rejection of this step must not become an unhandled rejection.
      if (aborted) step.catch(() => {});
      const next = aborted ? await Promise.race([step, aborted]) : await step;
      if (next === ABORTED) signal!.throwIfAborted();
      else if (next.done) {
        sourceDone = true;
        break;
      } else {
        const bytes = await encoder.push(next.value);
        if (bytes.length > 0) yield bytes;
      }
    }
    signal?.throwIfAborted();
    const tail = await encoder.flush();
    if (tail.length > 0) yield tail;
  } finally {
    if (onAbort) signal!.removeEventListener('abort', onAbort);
    encoder.close();
    if (!sourceDone) {
      // Not awaited: a source generator blocked in an await only settles return() after that await, and
      // an abort must not wait for it. Its own finally still runs then (and sees the same signal).
      iterator.return?.()?.catch(() => {});
    }
  }
}
