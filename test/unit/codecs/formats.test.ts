/**
 * The media type of each headerless PCM format must describe the bytes its encoder writes: a client that
 * knows only the Content-Type (RFC 2586 reads `audio/L16` as big-endian; `audio/pcm` is little-endian
 * unless it says otherwise) must read back the samples that were encoded, at the rate the label states.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createEncoder } from '../../../src/codecs/encoders/index.js';
import { formatInfo } from '../../../src/codecs/formats.js';
import type { SpeechFormat } from '../../../src/codecs/types.js';

const RAW_PCM: SpeechFormat[] = ['pcm', 'l16_8000', 'l16_16000'];

interface PcmLabel {
  essence: string;
  rate?: number;
  channels?: number;
  littleEndian: boolean;
}

/** What a client can learn from the Content-Type alone. */
function readLabel(mediaType: string): PcmLabel {
  const [essence, ...params] = mediaType.split(';').map((p) => p.trim());
  const values = new Map(params.map((p) => p.split('=') as [string, string]).map(([k, v]) => [k.toLowerCase(), v]));
  const type = essence!.toLowerCase();
  // RFC 2586: L16 is in network byte order and has no parameter that could change it.
  const littleEndian = type === 'audio/l16' ? false : (values.get('endianness') ?? 'little') === 'little';
  return {
    essence: type,
    rate: values.has('rate') ? Number(values.get('rate')) : undefined,
    channels: values.has('channels') ? Number(values.get('channels')) : undefined,
    littleEndian,
  };
}

function readSamples(bytes: Uint8Array, littleEndian: boolean): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Array.from({ length: bytes.byteLength / 2 }, (_, i) => view.getInt16(i * 2, littleEndian));
}

describe('headerless PCM media types', () => {
  it.each(RAW_PCM)('%s: the Content-Type is never RFC 2586 audio/L16 (big-endian) for little-endian bytes', (format) => {
    expect(readLabel(formatInfo(format).mediaType).essence).not.toBe('audio/l16');
  });

  it.each(['l16_8000', 'l16_16000'] as const)('%s: the label states the rate, one channel, and 16-bit signed little-endian samples', (format) => {
    const info = formatInfo(format);
    expect(readLabel(info.mediaType)).toEqual({ essence: 'audio/pcm', rate: info.sampleRate, channels: 1, littleEndian: true });
    expect(info.mediaType).toMatch(/;encoding=signed-int;bits=16;endianness=little$/);
  });

  it.each(RAW_PCM)('%s: reading the bytes as the label says gives back the encoded samples (property)', async (format) => {
    const info = formatInfo(format);
    const label = readLabel(info.mediaType);
    if (label.rate !== undefined) expect(label.rate).toBe(info.sampleRate);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: -32767, max: 32767 }), { minLength: 1, maxLength: 400 }), async (samples) => {
        // Fed at the format's own rate, so nothing is resampled and every sample must survive exactly.
        const encoder = await createEncoder(format, { inputRate: info.sampleRate });
        const head = await encoder.push(Float32Array.from(samples, (s) => s / 32767));
        const tail = await encoder.flush();
        const bytes = new Uint8Array([...head, ...tail]);
        expect(readSamples(bytes, label.littleEndian)).toEqual(samples);
      }),
      { seed: 20260610, numRuns: 60 },
    );
  });
});
