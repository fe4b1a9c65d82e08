/**
 * FLAC output (`flac`, audio/flac): libFLAC compiled to WASM (`libflacjs`), 16-bit mono at 24 kHz,
 * compression level 5, fixed 576-sample blocks (24 ms) so bytes follow the audio closely.
 *
 * The stream header ("fLaC", STREAMINFO, VORBIS_COMMENT) is written when the encoder is initialised and
 * goes out with the first push(). libFLAC would normally seek back at the end to fill STREAMINFO's total
 * sample count, frame sizes and MD5; a response stream cannot seek, so those stay 0 = "unknown", which
 * every decoder accepts (they read until the end of the stream).
 */

import { createRequire } from 'node:module';
import type createFlacModule from 'libflacjs';
import { FLAC_BLOCK_SAMPLES, formatInfo } from '../formats.js';
import type { EncoderOptions, StreamingEncoder } from '../types.js';
import { concatBytes, streamingEncoderFromCore } from './encoder-lifecycle.js';
import { floatToInt16 } from './pcm.js';

type Flac = createFlacModule.Flac;

export const FLAC_COMPRESSION_LEVEL = 5;

let flacPromise: Promise<Flac> | undefined;

/**
 * Loads the WASM build once per thread. Its emscripten loader prefers fetch() whenever a global fetch
 * exists, and fetch cannot read the .wasm from a file path in Node; it also wraps the global fetch for
 * good. Hiding fetch for the synchronous require makes it read the file with fs and leaves fetch alone.
 */
function loadFlac(): Promise<Flac> {
  flacPromise ??= new Promise<Flac>((resolve, reject) => {
    const require = createRequire(import.meta.url);
    const descriptor = Object.getOwnPropertyDescriptor(globalThis, 'fetch');
    let flac: Flac;
    try {
      if (descriptor) Reflect.deleteProperty(globalThis, 'fetch');
      flac = (require('libflacjs') as typeof createFlacModule)('wasm');
    } catch (error) {
      reject(error instanceof Error ? error : new Error(String(error)));
      return;
    } finally {
      if (descriptor) Object.defineProperty(globalThis, 'fetch', descriptor);
    }
    if (flac.isReady()) resolve(flac);
    else flac.on('ready', () => resolve(flac));
  });
  flacPromise.catch(() => {
    flacPromise = undefined;
  });
  return flacPromise;
}

export async function createFlacEncoder(options: EncoderOptions): Promise<StreamingEncoder> {
  const info = formatInfo('flac');
  const flac = await loadFlac();
  // Verification (decoding every frame again) would halve the speed for a check libFLAC's tests already make.
  const id = flac.create_libflac_encoder(info.sampleRate, 1, 16, FLAC_COMPRESSION_LEVEL, 0, false, FLAC_BLOCK_SAMPLES);
  if (id === 0) throw new Error('flac encoder: libFLAC could not create an encoder');

  // libflacjs copies each write out of WASM memory before calling us, so the chunks can be kept as they are.
  let pending: Uint8Array[] = [];
  const status = flac.init_encoder_stream(id, (data) => {
    pending.push(data);
  });
  if (status !== 0) {
    flac.FLAC__stream_encoder_delete(id);
    throw new Error(`flac encoder: init failed with status ${status}`);
  }
  const drain = (): Uint8Array => {
    const out = concatBytes(pending);
    pending = [];
    return out;
  };
  const fail = (operation: string): never => {
    throw new Error(`flac encoder: ${operation} failed in state ${flac.FLAC__stream_encoder_get_state(id)}`);
  };

  return streamingEncoderFromCore(info, options, {
    encode(samples) {
      if (samples.length > 0) {
        // libFLAC takes 32-bit integers right-justified to the 16-bit depth.
        const pcm = Int32Array.from(floatToInt16(samples));
        if (!flac.FLAC__stream_encoder_process_interleaved(id, pcm, pcm.length)) fail('process');
      }
      return drain();
    },
    finish() {
      // Encodes the buffered partial block as a shorter last frame (no padding needed in FLAC).
      if (!flac.FLAC__stream_encoder_finish(id)) fail('finish');
      return drain();
    },
    release() {
      // delete() finishes an unfinished stream first; whatever it writes lands in `pending` and is dropped.
      flac.FLAC__stream_encoder_delete(id);
      pending = [];
    },
  });
}
