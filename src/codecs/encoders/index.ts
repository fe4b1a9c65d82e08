/**
 * The encoder registry: one createEncoder() for all 13 speech formats (on this thread or in the encoder
 * worker pool). The loop that feeds an encoder a stream of speech is the voice core's (src/voice/phrase-encoder.ts).
 */

import type { EncoderOptions, SpeechFormat, StreamingEncoder } from '../types.js';
import { createPooledEncoder } from '../encode-pool/pooled-encoder.js';
import { POOLED_FORMATS, sharedEncoderPool } from '../encode-pool/shared-pool.js';
import { createInThreadEncoder } from './in-thread.js';

/**
 * An encoder for `format`. The formats that cost the I/O thread more than a few hundred µs per 0.1 s
 * slice run in the encoder worker pool (same interface, same bytes); the rest on this thread.
 */
export async function createEncoder(format: SpeechFormat, options: EncoderOptions): Promise<StreamingEncoder> {
  const pool = POOLED_FORMATS.has(format) ? sharedEncoderPool() : null;
  return pool ? createPooledEncoder(pool, format, options) : createInThreadEncoder(format, options);
}
