/**
 * Streaming WAV (`wav` at 24 kHz, `wav_8k` at 8 kHz): a 44-byte RIFF/WAVE header for 16-bit mono PCM,
 * then the samples as they arrive. The length is unknown when the header goes out, so the RIFF and data
 * sizes are 0xFFFFFFFF — the convention ffmpeg, SoX, browsers and audio-decode read as "until end of file".
 */

import { formatInfo } from '../formats.js';
import type { EncoderOptions, StreamingEncoder } from '../types.js';
import { streamingEncoderFromCore } from './encoder-lifecycle.js';
import { floatToInt16, int16ToLeBytes } from './pcm.js';

export type WavFormat = 'wav' | 'wav_8k';

export const WAV_HEADER_BYTES = 44;
const UNKNOWN_SIZE = 0xffffffff;

/** RIFF header for mono s16le PCM with "unknown" RIFF and data chunk sizes. */
export function streamingWavHeader(sampleRate: number): Uint8Array {
  const header = new Uint8Array(WAV_HEADER_BYTES);
  const view = new DataView(header.buffer);
  const ascii = (offset: number, text: string): void => {
    for (let i = 0; i < text.length; i++) header[offset + i] = text.charCodeAt(i);
  };
  const channels = 1;
  const bytesPerSample = 2;
  ascii(0, 'RIFF');
  view.setUint32(4, UNKNOWN_SIZE, true);
  ascii(8, 'WAVE');
  ascii(12, 'fmt ');
  view.setUint32(16, 16, true); // fmt chunk size for plain PCM
  view.setUint16(20, 1, true); // WAVE_FORMAT_PCM
  view.setUint16(22, channels, true);
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * channels * bytesPerSample, true); // byte rate
  view.setUint16(32, channels * bytesPerSample, true); // block align
  view.setUint16(34, bytesPerSample * 8, true);
  ascii(36, 'data');
  view.setUint32(40, UNKNOWN_SIZE, true);
  return header;
}

export async function createWavEncoder(format: WavFormat, options: EncoderOptions): Promise<StreamingEncoder> {
  const info = formatInfo(format);
  let headerSent = false;
  // The header goes out with the first push even when the resampler has not produced a sample yet, so a
  // client sees bytes (and can set up playback) at once; an empty stream still flushes a valid header.
  const encode = (samples: Float32Array): Uint8Array => {
    if (headerSent) return int16ToLeBytes(floatToInt16(samples));
    headerSent = true;
    const out = new Uint8Array(WAV_HEADER_BYTES + samples.length * 2);
    out.set(streamingWavHeader(info.sampleRate), 0);
    int16ToLeBytes(floatToInt16(samples), out, WAV_HEADER_BYTES);
    return out;
  };
  return streamingEncoderFromCore(info, options, {
    encode,
    finish: () => (headerSent ? new Uint8Array(0) : encode(new Float32Array(0))),
    release: () => {},
  });
}
