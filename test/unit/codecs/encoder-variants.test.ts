/**
 * Encoding variants (the ElevenLabs rates): `pcm` at any rate from 8 to 48 kHz holds exactly the resampled
 * length of what was pushed, labelled with its rate, whichever thread encodes it; `mp3` at each MPEG rate
 * and bitrate decodes at that rate, and every frame header says that bitrate. A variant a format cannot
 * take is refused before any codec is created.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createEncoder } from '../../../src/codecs/encoders/index.js';
import { createInThreadEncoder } from '../../../src/codecs/encoders/in-thread.js';
import { formatInfo } from '../../../src/codecs/formats.js';
import { decodeAudio } from '../../../src/codecs/decode/decode-audio.js';
import type { EncodingVariant, SpeechFormat, StreamingEncoder } from '../../../src/codecs/types.js';
import { speechLikeSignal } from './encoders/codec-test-utils.js';

async function encodeWhole(encoder: StreamingEncoder, input: Float32Array, chunk: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for (let i = 0; i < input.length; i += chunk) parts.push(await encoder.push(input.subarray(i, i + chunk)));
  parts.push(await encoder.flush());
  return Buffer.concat(parts);
}

/** Bitrates (kbit/s) of every MPEG audio frame header, walking frame by frame from the first sync word. */
function mp3FrameBitrates(bytes: Uint8Array): number[] {
  const MPEG1 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
  const MPEG2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
  const RATES: Record<number, number[]> = { 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] };
  const out: number[] = [];
  let i = bytes.indexOf(0xff);
  while (i >= 0 && i + 4 <= bytes.length && bytes[i] === 0xff && (bytes[i + 1]! & 0xe0) === 0xe0) {
    const version = (bytes[i + 1]! >> 3) & 3;
    const bitrate = (version === 3 ? MPEG1 : MPEG2)[bytes[i + 2]! >> 4]!;
    const rate = RATES[version]![(bytes[i + 2]! >> 2) & 3]!;
    const padding = (bytes[i + 2]! >> 1) & 1;
    out.push(bitrate);
    i += Math.floor(((version === 3 ? 144 : 72) * bitrate * 1000) / rate) + padding;
  }
  return out;
}

describe('pcm at another rate', () => {
  it('holds Math.round(n · rate / 24000) samples, for any rate and chunking, in the pool and on this thread', async () => {
    const input = speechLikeSignal(0.5);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 8000, max: 48000 }), fc.integer({ min: 1, max: 5000 }), fc.boolean(), async (sampleRate, chunk, pooled) => {
        const variant = { sampleRate };
        const encoder = pooled ? await createEncoder('pcm', { inputRate: 24000, variant }) : await createInThreadEncoder('pcm', { inputRate: 24000, variant });
        expect(encoder.info.sampleRate).toBe(sampleRate);
        expect(encoder.info.mediaType).toContain(`rate=${sampleRate}`);
        const bytes = await encodeWhole(encoder, input, chunk);
        expect(bytes.length).toBe(2 * Math.round((input.length * sampleRate) / 24000));
      }),
      { numRuns: 25 },
    );
  });
});

describe('mp3 at another rate and bitrate', () => {
  it.each([
    [22050, 32],
    [44100, 128],
    [44100, 32],
    [48000, 192],
    [16000, 64],
  ])('%i Hz at %i kbit/s decodes at that rate, every frame at that bitrate', async (sampleRate, bitrateKbps) => {
    const encoder = await createEncoder('mp3', { inputRate: 24000, variant: { sampleRate, bitrateKbps } });
    const bytes = await encodeWhole(encoder, speechLikeSignal(1), 2400);
    const decoded = await decodeAudio(bytes, { targetRate: 16000 });
    expect([decoded.container, decoded.sourceSampleRate]).toEqual(['mp3', sampleRate]);
    expect(decoded.durationSeconds).toBeGreaterThan(0.95);
    const bitrates = mp3FrameBitrates(bytes);
    expect(bitrates.length).toBeGreaterThan(10);
    expect(new Set(bitrates)).toEqual(new Set([bitrateKbps]));
  });

  it('a variant stream leaves the next plain mp3 stream at 24 kHz, 48 kbit/s (the reused encoders are reset)', async () => {
    for (let i = 0; i < 2; i++)
      await encodeWhole(
        await createInThreadEncoder('mp3', { inputRate: 24000, variant: { sampleRate: 44100, bitrateKbps: 128 } }),
        speechLikeSignal(0.3),
        2400,
      );
    const plain = await encodeWhole(await createInThreadEncoder('mp3', { inputRate: 24000 }), speechLikeSignal(0.5), 2400);
    expect((await decodeAudio(plain, { targetRate: 16000 })).sourceSampleRate).toBe(24000);
    expect(new Set(mp3FrameBitrates(plain))).toEqual(new Set([48]));
  });
});

describe('variants that cannot be', () => {
  it.each<[SpeechFormat, EncodingVariant]>([
    ['wav', { sampleRate: 22050 }],
    ['opus', { sampleRate: 48000 }],
    ['l16_16000', { sampleRate: 22050 }],
    ['pcm', { sampleRate: 96000 }],
    ['pcm', { sampleRate: 22050, bitrateKbps: 32 }],
    ['mp3', { sampleRate: 44100, bitrateKbps: 8 }],
    ['mp3', { sampleRate: 22050, bitrateKbps: 320 }],
    ['mp3', { sampleRate: 22000, bitrateKbps: 32 }],
  ])('%s with %o is a RangeError, on this thread and in the pool', async (format, variant) => {
    expect(() => formatInfo(format, variant)).toThrow(RangeError);
    await expect(createInThreadEncoder(format, { inputRate: 24000, variant })).rejects.toThrow(RangeError);
    await expect(createEncoder(format, { inputRate: 24000, variant })).rejects.toThrow(RangeError);
  });
});
