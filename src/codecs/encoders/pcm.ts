/**
 * Headerless 16-bit signed little-endian mono PCM: `pcm` (24 kHz), `l16_8000` and `l16_16000` (SPEC §4.5:
 * same structure at 8 and 16 kHz). Also home of the one float → s16 quantizer every 16-bit encoder (wav,
 * flac, opus, G.711) uses, so that "lossless" means the same samples everywhere.
 */

import { formatInfo } from '../formats.js';
import type { EncoderOptions, StreamingEncoder } from '../types.js';
import { streamingEncoderFromCore } from './encoder-lifecycle.js';

export type PcmFormat = 'pcm' | 'l16_8000' | 'l16_16000';

/**
 * Float [-1, 1] → s16: clamp, scale by 32767 (symmetric, so ±1.0 map to ±32767 and never wrap), round to
 * nearest. NaN becomes 0 rather than poisoning a whole frame downstream.
 */
export function floatToInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const x = samples[i]!;
    out[i] = x >= 1 ? 32767 : x <= -1 ? -32767 : x === x ? Math.round(x * 32767) : 0;
  }
  return out;
}

/** s16 → little-endian bytes, explicit per byte so the output does not depend on the host's endianness. */
export function int16ToLeBytes(samples: Int16Array, target?: Uint8Array, offset = 0): Uint8Array {
  const out = target ?? new Uint8Array(samples.length * 2);
  for (let i = 0, j = offset; i < samples.length; i++, j += 2) {
    const v = samples[i]!;
    out[j] = v & 0xff;
    out[j + 1] = (v >> 8) & 0xff;
  }
  return out;
}

export async function createPcmEncoder(format: PcmFormat, options: EncoderOptions): Promise<StreamingEncoder> {
  return streamingEncoderFromCore(formatInfo(format), options, {
    encode: (samples) => int16ToLeBytes(floatToInt16(samples)),
    finish: () => new Uint8Array(0),
    release: () => {},
  });
}
