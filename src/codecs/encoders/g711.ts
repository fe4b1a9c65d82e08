/**
 * Headerless 8 kHz G.711 for telephony: `ulaw` and `ulaw_8k` (μ-law, identical bytes — see formats.ts)
 * and `alaw` (A-law). One byte per sample, so every pushed sample is out at once; the companding is
 * alawmulaw's table code (≈200 M samples/s), fed with the shared s16 quantizer.
 */

import alawmulaw from 'alawmulaw';
import { formatInfo } from '../formats.js';
import type { EncoderOptions, StreamingEncoder } from '../types.js';
import { streamingEncoderFromCore } from './encoder-lifecycle.js';
import { floatToInt16 } from './pcm.js';

export type G711Format = 'ulaw' | 'ulaw_8k' | 'alaw';

// alawmulaw ships a UMD bundle: Node's ESM loader exposes only its default export, not named ones.
const { alaw, mulaw } = alawmulaw;

/** Float samples → G.711 bytes, through the same s16 quantization as the PCM formats. */
export function encodeG711(format: G711Format, samples: Float32Array): Uint8Array {
  const pcm = floatToInt16(samples);
  return format === 'alaw' ? alaw.encode(pcm) : mulaw.encode(pcm);
}

export async function createG711Encoder(format: G711Format, options: EncoderOptions): Promise<StreamingEncoder> {
  return streamingEncoderFromCore(formatInfo(format), options, {
    encode: (samples) => encodeG711(format, samples),
    finish: () => new Uint8Array(0),
    release: () => {},
  });
}
