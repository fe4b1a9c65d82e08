/**
 * The encoder registry: one createEncoder() for all 13 speech formats, and encodeStream(), which turns a
 * pull-based stream of PCM chunks into a stream of encoded bytes with flush at the end and the encoder
 * always closed — on success, error, consumer break, or abort.
 */

import type { EncoderOptions, SpeechFormat, StreamingEncoder } from '../types.js';
import { createAacEncoder } from './aac.js';
import { createFlacEncoder } from './flac.js';
import { createFmp4Encoder } from './fmp4.js';
import { createG711Encoder } from './g711.js';
import { createMp3Encoder } from './mp3.js';
import { createOpusEncoder } from './opus.js';
import { createPcmEncoder } from './pcm.js';
import { createWavEncoder } from './wav.js';

const FACTORIES: Readonly<Record<SpeechFormat, (options: EncoderOptions) => Promise<StreamingEncoder>>> = {
  pcm: (options) => createPcmEncoder('pcm', options),
  l16_8000: (options) => createPcmEncoder('l16_8000', options),
  l16_16000: (options) => createPcmEncoder('l16_16000', options),
  wav: (options) => createWavEncoder('wav', options),
  wav_8k: (options) => createWavEncoder('wav_8k', options),
  ulaw: (options) => createG711Encoder('ulaw', options),
  ulaw_8k: (options) => createG711Encoder('ulaw_8k', options),
  alaw: (options) => createG711Encoder('alaw', options),
  mp3: createMp3Encoder,
  opus: createOpusEncoder,
  aac: createAacEncoder,
  fmp4: createFmp4Encoder,
  flac: createFlacEncoder,
};

export async function createEncoder(format: SpeechFormat, options: EncoderOptions): Promise<StreamingEncoder> {
  const factory = FACTORIES[format];
  // The format usually comes from a validated request, but a bad value must not surface as "not a function".
  if (!factory) throw new Error(`no encoder for format ${JSON.stringify(format)}`);
  return factory(options);
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
