/**
 * The decoder matrix, second source: what Kuma's own streaming encoders produce (every format with a
 * container a decoder can recognise from its bytes), at each format's rate, decodes back to the source —
 * exactly for lossless formats, above a stated SNR/correlation floor (after alignment) for lossy ones.
 * Headerless formats (pcm, l16_*, ulaw, alaw) carry nothing to detect and must be refused as unsupported.
 */
import { describe, expect, it } from 'vitest';
import { decodeAudio } from '../../../src/codecs/decode/decode-audio.js';
import { createEncoder } from '../../../src/codecs/encoders/index.js';
import { formatInfo } from '../../../src/codecs/formats.js';
import { resample } from '../../../src/codecs/resample.js';
import { AudioDecodeError, type SpeechFormat } from '../../../src/codecs/types.js';
import { compareAligned, maxAbsDiff, speechLike } from './helpers/signals.js';

const INPUT_RATE = 24000;

async function encode(format: SpeechFormat, input: Float32Array): Promise<Uint8Array> {
  const encoder = await createEncoder(format, { inputRate: INPUT_RATE });
  const parts = [await encoder.push(input), await encoder.flush()];
  encoder.close();
  return Buffer.concat(parts);
}

/** What a lossless encoder stores: the input at the format's rate, quantised to 16 bits. */
async function quantised(input: Float32Array, rate: number): Promise<Float32Array> {
  const atRate = rate === INPUT_RATE ? input : await resample(input, INPUT_RATE, rate);
  return atRate.map((v) => Math.round(Math.max(-1, Math.min(1, v)) * 32767) / 32768);
}

const LOSSLESS: Array<[SpeechFormat, string]> = [
  ['wav', 'wav'],
  ['wav_8k', 'wav'],
  ['flac', 'flac'],
];
// Floors sit below what was measured on 1 s of speech-like signal (mp3 ≈ 0.97, opus ≈ 0.85, aac ≈ 0.98 correlation).
const LOSSY: Array<[SpeechFormat, string, { minSnrDb: number; minCorrelation: number }]> = [
  ['mp3', 'mp3', { minSnrDb: 8, minCorrelation: 0.9 }],
  ['opus', 'ogg-opus', { minSnrDb: 2, minCorrelation: 0.7 }],
  ['aac', 'adts', { minSnrDb: 10, minCorrelation: 0.9 }],
  ['fmp4', 'mp4', { minSnrDb: 10, minCorrelation: 0.9 }],
];

describe('decodeAudio on Kuma-encoded audio', () => {
  const input = speechLike(INPUT_RATE, 1);

  it.each(LOSSLESS)('%s decodes sample-exact at its own rate', async (format, container) => {
    const rate = formatInfo(format).sampleRate;
    const decoded = await decodeAudio(await encode(format, input), { targetRate: rate });
    const expected = await quantised(input, rate);
    expect(decoded).toMatchObject({ container, sampleRate: rate, sourceSampleRate: rate, sourceChannels: 1 });
    expect(decoded.samples.length).toBe(expected.length);
    expect(maxAbsDiff(expected, decoded.samples)).toBeLessThanOrEqual(1 / 32768);
  });

  it.each(LOSSY)('%s decodes to the source within its floor', async (format, container, floor) => {
    const rate = formatInfo(format).sampleRate;
    const decoded = await decodeAudio(await encode(format, input), { targetRate: rate });
    expect(decoded.container).toBe(container);
    expect(decoded.sampleRate).toBe(rate);
    expect(Math.abs(decoded.durationSeconds - 1)).toBeLessThan(0.1);
    const c = compareAligned(input, decoded.samples, Math.round(0.1 * rate), Math.round(0.05 * rate));
    expect(c.snrDb).toBeGreaterThanOrEqual(floor.minSnrDb);
    expect(c.correlation).toBeGreaterThanOrEqual(floor.minCorrelation);
  });

  it.each(['pcm', 'l16_16000', 'ulaw', 'alaw'] as const)('headerless %s is refused as unsupported: nothing in the bytes says what it is', async (format) => {
    const err = await decodeAudio(await encode(format, input), { targetRate: 16000 }).catch((e) => e);
    expect(err).toBeInstanceOf(AudioDecodeError);
    expect(err.kind).toBe('unsupported');
  });
});
