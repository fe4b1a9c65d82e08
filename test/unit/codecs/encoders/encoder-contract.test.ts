/**
 * One contract for all 13 speech formats, through the registry: 1.5 s of speech-like 24 kHz audio is
 * encoded, decoded in-process, and checked for rate, channels, duration and fidelity (sample-exact for the
 * lossless formats, G.711-exact for μ-law/A-law, measured thresholds for the lossy ones); chunking must not
 * change the result; misuse of push/flush/close is rejected clearly. Where a system ffprobe exists (CI
 * installs Debian ffmpeg), every output is also checked by ffmpeg itself.
 */

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import alawmulaw from 'alawmulaw';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEncoder } from '../../../../src/codecs/encoders/index.js';
import { formatInfo } from '../../../../src/codecs/formats.js';
import { SPEECH_FORMATS, type SpeechFormat } from '../../../../src/codecs/types.js';
import {
  decodeFormat,
  encodeAll,
  INPUT_RATE,
  readOggPages,
  resampleWhole,
  speechLikeSignal,
  toS16,
  withOggSerialZero,
  type DecodedAudio,
} from './codec-test-utils.js';
import { compareAligned, findLag, spectralDistanceDb } from './signal-metrics.js';

const INPUT = speechLikeSignal(1.5);
const N = INPUT.length;

type Kind = 'lossless' | 'g711' | 'lossy';
const KIND: Record<SpeechFormat, Kind> = {
  pcm: 'lossless',
  l16_8000: 'lossless',
  l16_16000: 'lossless',
  wav: 'lossless',
  wav_8k: 'lossless',
  flac: 'lossless',
  ulaw: 'g711',
  ulaw_8k: 'g711',
  alaw: 'g711',
  mp3: 'lossy',
  opus: 'lossy',
  aac: 'lossy',
  fmp4: 'lossy',
};

/**
 * Lossy floors, measured on this signal (1.5 s, seed 7): mp3 48 kbps corr 0.974 / 2.2 dB; opus 32 kbps
 * VOIP corr 0.847 / 3.3 dB (SILK does not keep the waveform of noise: fricatives correlate ≈0.6, voiced
 * ≈0.9); aac/fmp4 (ffmpeg aac, VBR q 0.7, no TNS/PNS) corr 0.984 / 2.5 dB. Band-energy distance of
 * broken output (misaligned, noise) is 13–18 dB.
 */
const LOSSY_FLOOR: Partial<Record<SpeechFormat, { correlation: number; spectralDb: number }>> = {
  mp3: { correlation: 0.93, spectralDb: 4 },
  opus: { correlation: 0.75, spectralDb: 5 },
  aac: { correlation: 0.9, spectralDb: 5 },
  fmp4: { correlation: 0.9, spectralDb: 5 },
};

/** Formats whose bytes must not depend on chunking (AAC goes through ffmpeg; its encoder owns that claim). */
const BYTE_DETERMINISTIC = (format: SpeechFormat): boolean => format !== 'aac' && format !== 'fmp4';

/** Decoded audio at the format's coding rate (Opus always decodes at 48 kHz; some AAC decoders assume SBR and double). */
async function atFormatRate(format: SpeechFormat, decoded: DecodedAudio): Promise<Float32Array> {
  const rate = formatInfo(format).sampleRate;
  return decoded.sampleRate === rate ? decoded.samples : resampleWhole(decoded.samples, decoded.sampleRate, rate);
}

/** The first `mdhd` box's timescale (version 0: type, version/flags, creation, modification, then timescale). */
function mdhdTimescale(mp4: Uint8Array): number {
  const at = Buffer.from(mp4).indexOf('mdhd');
  if (at < 0) throw new Error('no mdhd box');
  expect(mp4[at + 4]).toBe(0);
  return new DataView(mp4.buffer, mp4.byteOffset).getUint32(at + 16); // MP4 is big-endian
}

describe.each(SPEECH_FORMATS)('%s encoder contract', (format) => {
  const info = formatInfo(format);
  const kind = KIND[format];
  let reference: Float32Array; // the input at the format's rate
  let bytes: Uint8Array;
  let decoded: DecodedAudio;

  beforeAll(async () => {
    reference = await resampleWhole(INPUT, INPUT_RATE, info.sampleRate);
    bytes = (await encodeAll(format, INPUT, 480)).bytes;
    decoded = await decodeFormat(format, bytes);
  });

  it('decodes to one channel at the format rate', () => {
    expect(decoded.channels).toBe(1);
    if (format === 'opus') {
      // Opus decodes at 48 kHz by definition; the coded rate is the OpusHead's input_sample_rate.
      expect(decoded.sampleRate).toBe(48000);
      const head = readOggPages(bytes)[0]!.body;
      expect(new TextDecoder().decode(head.subarray(0, 8))).toBe('OpusHead');
      expect(new DataView(head.buffer, head.byteOffset).getUint32(12, true)).toBe(24000);
    } else if (format === 'aac') {
      // ADTS sampling_frequency_index 6 = 24 kHz, channel_configuration 1; decoders that assume implicit
      // SBR for ≤ 24 kHz AAC-LC (audio-decode does) report 48 kHz, which is the decoder's choice.
      expect((bytes[2]! >> 2) & 0x0f).toBe(6);
      expect(((bytes[2]! & 1) << 2) | (bytes[3]! >> 6)).toBe(1);
      expect([24000, 48000]).toContain(decoded.sampleRate);
    } else if (format === 'fmp4') {
      // The track's media timescale is the AAC rate; the decoder may again assume implicit SBR (see aac).
      expect(mdhdTimescale(bytes)).toBe(24000);
      expect([24000, 48000]).toContain(decoded.sampleRate);
    } else {
      expect(decoded.sampleRate).toBe(info.sampleRate);
    }
  });

  if (kind !== 'lossy') {
    it('lasts exactly as long as the input', () => {
      expect(decoded.samples.length).toBe(Math.round((N * info.sampleRate) / INPUT_RATE));
      expect(reference.length).toBe(decoded.samples.length);
    });
  }

  if (kind === 'lossless') {
    it('round-trips sample-exact against the s16-quantized (resampled) input', () => {
      expect(decoded.s16).toBeDefined();
      expect(Array.from(decoded.s16!)).toEqual(Array.from(toS16(reference)));
    });
  }

  if (kind === 'g711') {
    it('is exactly G.711 of the s16-quantized resampled input, ≥ 30 dB SNR', () => {
      const codec = format === 'alaw' ? alawmulaw.alaw : alawmulaw.mulaw;
      expect(Array.from(bytes)).toEqual(Array.from(codec.encode(toS16(reference))));
      expect(compareAligned(reference, decoded.samples, 0).snrDb).toBeGreaterThan(30);
    });
  }

  if (kind === 'lossy') {
    it('lasts as long as the input, within one codec frame after the codec delay', async () => {
      const audio = await atFormatRate(format, decoded);
      const lag = findLag(reference, audio, -50, 2500);
      if (format === 'opus') {
        // Pre-skip and end trimming remove the priming and padding: only libopus' few-sample phase remains.
        expect(Math.abs(lag)).toBeLessThanOrEqual(8);
        expect(audio.length).toBe(N);
      }
      // LAME's priming without a gapless tag: 576 encoder + 529 decoder delay.
      if (format === 'mp3') expect(lag).toBe(1105);
      expect(Math.abs(audio.length - lag - reference.length)).toBeLessThanOrEqual(info.frameSamples);
    });

    it('keeps the speech above the measured quality floor', async () => {
      const audio = await atFormatRate(format, decoded);
      const lag = findLag(reference, audio, -50, 2500);
      const floor = LOSSY_FLOOR[format]!;
      expect(compareAligned(reference, audio, lag).correlation).toBeGreaterThan(floor.correlation);
      expect(spectralDistanceDb(reference, audio, lag, info.sampleRate)).toBeLessThan(floor.spectralDb);
    });
  }

  it('gives the same audio whether fed in 1-sample, 20 ms or 1 s chunks', async () => {
    const variants = [(await encodeAll(format, INPUT, 1)).bytes, (await encodeAll(format, INPUT, 24000)).bytes];
    for (const variant of variants) {
      if (BYTE_DETERMINISTIC(format)) {
        // Ogg serials are random per stream; everything else must be the same byte for byte.
        const normalise = format === 'opus' ? withOggSerialZero : (b: Uint8Array) => b;
        expect(Buffer.from(normalise(variant)).equals(Buffer.from(normalise(bytes)))).toBe(true);
      } else {
        const a = await atFormatRate(format, decoded);
        const b = await atFormatRate(format, await decodeFormat(format, variant));
        const lag = findLag(a, b, -1100, 1100);
        expect(compareAligned(a, b, lag).correlation).toBeGreaterThan(0.99);
      }
    }
  });

  it('accepts another input rate (16 kHz) and resamples to its own', async () => {
    const input16k = speechLikeSignal(0.5, 16000);
    const out = await decodeFormat(format, (await encodeAll(format, input16k, 320, 16000)).bytes);
    const audio = await atFormatRate(format, out);
    const expected = Math.round((input16k.length * info.sampleRate) / 16000);
    if (kind === 'lossy') expect(audio.length).toBeGreaterThanOrEqual(expected - info.frameSamples);
    else expect(audio.length).toBe(expected);
  });

  it('rejects push and flush after the end; close is idempotent', async () => {
    const flushed = await createEncoder(format, { inputRate: INPUT_RATE });
    await flushed.push(INPUT.subarray(0, 100));
    await flushed.flush();
    await expect(flushed.push(INPUT.subarray(0, 10))).rejects.toThrow(/after end/);
    await expect(flushed.flush()).rejects.toThrow(/after end/);
    flushed.close();
    flushed.close();

    const closed = await createEncoder(format, { inputRate: INPUT_RATE });
    await closed.push(INPUT.subarray(0, 100));
    closed.close();
    closed.close();
    await expect(closed.push(INPUT.subarray(0, 10))).rejects.toThrow(/closed/);
    await expect(closed.flush()).rejects.toThrow(/closed/);

    const empty = await createEncoder(format, { inputRate: INPUT_RATE });
    expect(empty.info).toBe(info);
    expect(await empty.flush()).toBeInstanceOf(Uint8Array);
    empty.close();
  });
});

/** A system ffmpeg/ffprobe (not the bundled static ffmpeg): CI installs Debian's. */
const hasSystemFfmpeg = ['ffprobe', 'ffmpeg'].every((tool) => spawnSync(tool, ['-version'], { stdio: 'ignore' }).status === 0);

/** How ffmpeg must be told the layout of the headerless formats. */
const RAW_INPUT: Partial<Record<SpeechFormat, string[]>> = {
  pcm: ['-f', 's16le', '-ar', '24000', '-ac', '1'],
  l16_8000: ['-f', 's16le', '-ar', '8000', '-ac', '1'],
  l16_16000: ['-f', 's16le', '-ar', '16000', '-ac', '1'],
  ulaw: ['-f', 'mulaw', '-ar', '8000', '-ac', '1'],
  ulaw_8k: ['-f', 'mulaw', '-ar', '8000', '-ac', '1'],
  alaw: ['-f', 'alaw', '-ar', '8000', '-ac', '1'],
};

/** Samples beyond the input that ffmpeg may decode: codec priming and last-frame padding. */
const FFMPEG_EXTRA: Partial<Record<SpeechFormat, number>> = { mp3: 1105 + 576, aac: 2048, fmp4: 2048, opus: 480 };

describe.runIf(hasSystemFfmpeg)('outputs read by the system ffmpeg', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kuma-encoders-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(SPEECH_FORMATS)('%s: ffprobe sees mono at the right rate, ffmpeg decodes the full duration', async (format) => {
    const info = formatInfo(format);
    const file = join(dir, `out.${format}`);
    writeFileSync(file, (await encodeAll(format, INPUT, 480)).bytes);
    const input = [...(RAW_INPUT[format] ?? []), '-i', file];

    const probe = spawnSync('ffprobe', ['-v', 'error', '-show_streams', '-of', 'json', ...input], { encoding: 'utf8' });
    expect(probe.status, probe.stderr).toBe(0);
    const stream = (JSON.parse(probe.stdout) as { streams: { sample_rate: string; channels: number }[] }).streams[0]!;
    expect(stream.channels).toBe(1);
    expect(Number(stream.sample_rate)).toBe(format === 'opus' ? 48000 : info.sampleRate);

    // Duration by decoding everything (stream headers of live-written files carry no length).
    const pcm = spawnSync('ffmpeg', ['-v', 'error', ...input, '-f', 's16le', '-ac', '1', '-ar', String(info.sampleRate), '-'], { maxBuffer: 64 << 20 });
    expect(pcm.status, pcm.stderr?.toString()).toBe(0);
    const samples = pcm.stdout.length / 2;
    const expected = Math.round((N * info.sampleRate) / INPUT_RATE);
    const extra = FFMPEG_EXTRA[format] ?? 0;
    expect(samples).toBeGreaterThanOrEqual(expected - (format === 'opus' ? 480 : 0));
    expect(samples).toBeLessThanOrEqual(expected + extra);
  });
});
