/**
 * Encoders stream: audio bytes come out as soon as the codec has a frame, not at flush(). For each format
 * the input is pushed in 20 ms pieces (and, where it matters, 1 sample at a time) and the sample count at
 * which the first AUDIO bytes appear (container headers do not count) is checked against the format's
 * frame.
 */

import { describe, expect, it } from 'vitest';
import { createEncoder } from '../../../../src/codecs/encoders/index.js';
import { FLAC_BLOCK_SAMPLES, formatInfo, MP3_FRAME_SAMPLES, OPUS_FRAME_SAMPLES } from '../../../../src/codecs/formats.js';
import { SPEECH_FORMATS, type SpeechFormat } from '../../../../src/codecs/types.js';
import { concatBytes, readOggPages, speechLikeSignal } from './codec-test-utils.js';

const INPUT = speechLikeSignal(0.5);
const PIECE = 480; // 20 ms at 24 kHz

/** Length of the FLAC stream header: "fLaC" and the metadata blocks up to the one flagged last. */
function flacHeaderLength(bytes: Uint8Array): number {
  let offset = 4;
  for (;;) {
    if (offset + 4 > bytes.length) return Infinity;
    const last = (bytes[offset]! & 0x80) !== 0;
    offset += 4 + ((bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!);
    if (last) return offset;
  }
}

/** Top-level MP4 box types present in the bytes so far. */
function mp4Boxes(bytes: Uint8Array): string[] {
  const types: string[] = [];
  for (let offset = 0; offset + 8 <= bytes.length;) {
    const size = new DataView(bytes.buffer, bytes.byteOffset + offset).getUint32(0);
    types.push(String.fromCharCode(...bytes.subarray(offset + 4, offset + 8)));
    if (size < 8) break;
    offset += size;
  }
  return types;
}

/** Whether the stream so far contains coded audio, as opposed to only container headers. */
function hasAudio(format: SpeechFormat, bytes: Uint8Array): boolean {
  switch (format) {
    case 'wav':
    case 'wav_8k':
      return bytes.length > 44;
    case 'opus':
      return readOggPages(bytes).some((page) => page.sequence >= 2); // pages 0 and 1: OpusHead, OpusTags
    case 'flac':
      return bytes.length > flacHeaderLength(bytes);
    case 'fmp4':
      return mp4Boxes(bytes).includes('mdat');
    default:
      return bytes.length > 0; // headerless PCM/G.711, MP3 and ADTS carry nothing but audio
  }
}

/** Pushes `input` in pieces; returns the input sample count after which audio first came out, and the first output. */
async function firstAudioAt(format: SpeechFormat, piece: number): Promise<{ samples: number; firstOutput: Uint8Array }> {
  const encoder = await createEncoder(format, { inputRate: 24000 });
  const outputs: Uint8Array[] = [];
  try {
    for (let offset = 0; offset < INPUT.length; offset += piece) {
      outputs.push(await encoder.push(INPUT.subarray(offset, offset + piece)));
      if (hasAudio(format, concatBytes(outputs))) return { samples: offset + piece, firstOutput: outputs[0]! };
    }
  } finally {
    encoder.close();
  }
  throw new Error(`${format}: no audio bytes before flush()`);
}

/**
 * Where the first audio bytes may appear (input samples, 24 kHz), pushing 20 ms pieces. Sample formats: the
 * first piece. MP3: LAME holds one 576-sample frame plus its lookahead (first bytes at 800 samples when fed
 * sample by sample). Opus: the first 20 ms frame. FLAC: libFLAC emits a block once one more sample than the
 * block arrived (577). AAC: at most two 1024-sample frames (ffmpeg's priming frame plus lookahead).
 */
function bound(format: SpeechFormat): number {
  const info = formatInfo(format);
  const roundUp = (samples: number): number => Math.ceil(samples / PIECE) * PIECE;
  if (info.frameSamples === 1) return PIECE;
  if (format === 'mp3') return roundUp(2 * MP3_FRAME_SAMPLES);
  if (format === 'opus') return OPUS_FRAME_SAMPLES;
  if (format === 'flac') return roundUp(FLAC_BLOCK_SAMPLES + 1);
  return roundUp(2 * info.frameSamples);
}

describe('first audio bytes while pushing 20 ms pieces', () => {
  it.each(SPEECH_FORMATS)('%s', async (format) => {
    const { samples } = await firstAudioAt(format, PIECE);
    expect(samples).toBeLessThanOrEqual(bound(format));
    expect(samples).toBeGreaterThanOrEqual(Math.min(formatInfo(format).frameSamples, PIECE));
  });
});

describe('sample-by-sample pushes', () => {
  it.each(['pcm', 'wav'] as const)('%s: the first 1-sample push already returns the sample (after the header)', async (format) => {
    const { samples, firstOutput } = await firstAudioAt(format, 1);
    expect(samples).toBe(1);
    expect(firstOutput.length).toBe(format === 'wav' ? 46 : 2);
  });

  it.each(['opus', 'flac', 'wav_8k'] as const)('%s: the stream header comes with the first push, before any audio', async (format) => {
    const encoder = await createEncoder(format, { inputRate: 24000 });
    const first = await encoder.push(INPUT.subarray(0, 1));
    encoder.close();
    expect(first.length).toBeGreaterThan(0);
    expect(hasAudio(format, first)).toBe(false);
  });

  it('flac: the first frame comes out at block size + 1 samples', async () => {
    expect((await firstAudioAt('flac', 1)).samples).toBe(FLAC_BLOCK_SAMPLES + 1);
  });

  it('opus: the first audio page comes out with the 480th sample', async () => {
    expect((await firstAudioAt('opus', 1)).samples).toBe(OPUS_FRAME_SAMPLES);
  });

  it.each(['ulaw', 'l16_8000', 'l16_16000'] as const)('%s: bytes start within the resampler latency (< 10 ms)', async (format) => {
    // The resampler is aligned (no delay in its output) so it must see a few input samples ahead first.
    expect((await firstAudioAt(format, 1)).samples).toBeLessThan(240);
  });
});
