/**
 * The encoder factories of all 13 speech formats, run on the calling thread. createEncoder() (index.ts)
 * uses them directly for the cheap formats and through the encoder worker pool for the costly ones; the
 * pool's workers use them too, so a pooled stream runs exactly the code an in-thread one does.
 */

import { formatInfo } from '../formats.js';
import type { EncoderOptions, SpeechFormat, StreamingEncoder } from '../types.js';
import { createAacEncoder } from './aac.js';
import { createFlacEncoder } from './flac.js';
import { createFmp4Encoder } from './fmp4.js';
import { createG711Encoder } from './g711.js';
import { createMp3Encoder } from './mp3.js';
import { createOpusEncoder } from './opus.js';
import { createPcmEncoder } from './pcm.js';
import { createWavEncoder } from './wav.js';
import type { FfmpegAacPool } from './ffmpeg-aac-pool.js';

/** The ffmpeg pool of the aac and fmp4 encoders, asked for only when one is made; absent = the process-wide one. */
type AacPoolOf = (() => FfmpegAacPool) | undefined;

const FACTORIES: Readonly<Record<SpeechFormat, (options: EncoderOptions, aacPool: AacPoolOf) => Promise<StreamingEncoder>>> = {
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
  aac: (options, aacPool) => createAacEncoder(options, aacPool ? { pool: aacPool() } : {}),
  fmp4: (options, aacPool) => createFmp4Encoder(options, aacPool ? { pool: aacPool() } : {}),
  flac: createFlacEncoder,
};

/** An encoder for `format` running on this thread. */
export async function createInThreadEncoder(format: SpeechFormat, options: EncoderOptions, aacPool?: () => FfmpegAacPool): Promise<StreamingEncoder> {
  const factory = Object.hasOwn(FACTORIES, format) ? FACTORIES[format] : undefined;
  // The format usually comes from a validated request, but a bad value must not surface as "not a function".
  if (!factory) throw new Error(`no encoder for format ${JSON.stringify(format)}`);
  // A variant the format cannot take is refused here, before any codec is created.
  if (options.variant) formatInfo(format, options.variant);
  return factory(options, aacPool);
}
