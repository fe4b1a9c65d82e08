/**
 * The encoder registry: one createEncoder() for all 13 speech formats (on this thread or in the encoder
 * worker pool). The loop that feeds an encoder a stream of speech is the voice core's (src/voice/phrase-encoder.ts).
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
