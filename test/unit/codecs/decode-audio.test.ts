/**
 * decodeAudio on good input: the decoder matrix (every upload format × 5 rates × mono/stereo, produced
 * by ffmpeg from a known signal and compared with it), the resampling path, WAV variants that ffmpeg
 * does not write, and the duration limit, which must be enforced without decoding a whole huge file.
 *
 * The matrix is a list of UploadFormat producers (helpers/ffmpeg.ts): to add Kuma's own encoders, append
 * entries to MATRIX_FORMATS. Lossless formats are compared at the source rate within 1 LSB; lossy ones
 * are aligned by cross-correlation first and must reach their format's SNR and correlation floor.
 */
import { describe, expect, it } from 'vitest';
import { decodeAudio } from '../../../src/codecs/decode/decode-audio.js';
import { resample } from '../../../src/codecs/resample.js';
import { AudioDecodeError } from '../../../src/codecs/types.js';
import { FFMPEG_FORMATS, encodeWithFfmpeg, type UploadFormat } from './helpers/ffmpeg.js';
import { compareAligned, maxAbsDiff, mixdown, speechLike, stereoSpeechLike } from './helpers/signals.js';

const MATRIX_FORMATS: readonly UploadFormat[] = [...FFMPEG_FORMATS];
const MATRIX_RATES = [8000, 16000, 22050, 44100, 48000] as const;
const SECONDS = 0.5;

const source = (rate: number, channels: number): Float32Array[] => (channels === 1 ? [speechLike(rate, SECONDS)] : stereoSpeechLike(rate, SECONDS));

const cases = MATRIX_FORMATS.flatMap((format) =>
  MATRIX_RATES.filter((rate) => !format.rates || format.rates.includes(rate)).flatMap((rate) => [1, 2].map((channels) => ({ format, rate, channels }))),
);

// Concurrent: ffmpeg encodes in child processes while the previous case decodes on this thread.
describe.concurrent('decodeAudio: decoder matrix (formats × rates × channels)', () => {
  it.each(cases.map((c) => [c.format.name, c.rate, c.channels, c] as const))(
    '%s at %i Hz, %i channel(s), decodes to the source',
    async (_n, _r, _c, { format, rate, channels }) => {
      const input = source(rate, channels);
      const decoded = await decodeAudio(await format.encode(input, rate), { targetRate: rate });
      expect(decoded).toMatchObject({ container: format.container, sampleRate: rate });
      expect(decoded.sourceChannels).toBeLessThanOrEqual(channels); // dual-mono lossy streams may report 1
      const expected = mixdown(input);
      if (format.fidelity.kind === 'exact') {
        expect(decoded.samples.length).toBe(expected.length);
        expect(decoded.sourceSampleRate).toBe(rate);
        expect(decoded.sourceChannels).toBe(channels);
        expect(maxAbsDiff(expected, decoded.samples)).toBeLessThanOrEqual(format.fidelity.maxError);
      } else {
        expect(Math.abs(decoded.samples.length - expected.length)).toBeLessThanOrEqual(0.05 * rate);
        const maxLag = Math.round((format.fidelity.maxLagSeconds ?? 0.02) * rate);
        const c = compareAligned(expected, decoded.samples, maxLag, Math.round(0.05 * rate));
        expect(c.snrDb).toBeGreaterThanOrEqual(format.fidelity.minSnrDb);
        expect(c.correlation).toBeGreaterThanOrEqual(format.fidelity.minCorrelation);
      }
    },
  );
});

describe('decodeAudio: resampling to the model rate', () => {
  it.each(MATRIX_FORMATS.filter((f) => f.fidelity.kind === 'exact').map((f) => [f.name, f] as const))(
    '%s at 44.1 kHz stereo, asked for 16 kHz, equals the resampled mixdown (SNR > 70 dB)',
    async (_name, format) => {
      const input = source(44100, 2);
      const decoded = await decodeAudio(await format.encode(input, 44100), { targetRate: 16000 });
      const expected = await resample(mixdown(input), 44100, 16000);
      expect(decoded).toMatchObject({ sampleRate: 16000, sourceSampleRate: 44100, sourceChannels: 2 });
      expect(decoded.samples.length).toBe(expected.length);
      expect(decoded.durationSeconds).toBeCloseTo(SECONDS, 3);
      expect(compareAligned(expected, decoded.samples, 0, 0).snrDb).toBeGreaterThan(70);
    },
  );

  it('decodes lossy input at 48 kHz to 8 kHz band-limited and aligned', async () => {
    const input = source(48000, 1);
    const decoded = await decodeAudio(await encodeWithFfmpeg(input, 48000, ['-c:a', 'libvorbis'], 'ogg'), { targetRate: 8000 });
    const expected = await resample(input[0]!, 48000, 8000);
    const c = compareAligned(expected, decoded.samples, 40, 400);
    expect(Math.abs(c.lag)).toBeLessThanOrEqual(1);
    expect(c.snrDb).toBeGreaterThan(15);
  });
});

/** A WAV file from parts, for the variants ffmpeg does not write. */
function wavFile(o: {
  tag: number;
  bits: number;
  channels: number;
  rate: number;
  data: Uint8Array;
  dataSize?: number;
  extensible?: boolean;
  before?: Uint8Array;
}): Uint8Array {
  const fmtSize = o.extensible ? 40 : 16;
  const before = o.before ?? new Uint8Array(0);
  const out = new Uint8Array(12 + 8 + fmtSize + before.length + 8 + o.data.length);
  const v = new DataView(out.buffer);
  const text = (at: number, s: string) => [...s].forEach((ch, i) => (out[at + i] = ch.charCodeAt(0)));
  text(0, 'RIFF');
  v.setUint32(4, out.length - 8, true);
  text(8, 'WAVE');
  text(12, 'fmt ');
  v.setUint32(16, fmtSize, true);
  v.setUint16(20, o.extensible ? 0xfffe : o.tag, true);
  v.setUint16(22, o.channels, true);
  v.setUint32(24, o.rate, true);
  const block = o.channels * Math.ceil(o.bits / 8);
  v.setUint32(28, o.rate * block, true);
  v.setUint16(32, block, true);
  v.setUint16(34, o.bits, true);
  if (o.extensible) {
    v.setUint16(36, 22, true); // cbSize
    v.setUint16(38, o.bits, true); // valid bits
    v.setUint16(44, o.tag, true); // SubFormat GUID starts with the format tag
  }
  out.set(before, 20 + fmtSize);
  const data = 20 + fmtSize + before.length;
  text(data, 'data');
  v.setUint32(data + 4, o.dataSize ?? o.data.length, true);
  out.set(o.data, data + 8);
  return out;
}

const int16Bytes = (x: Float32Array) => new Uint8Array(Int16Array.from(x, (s) => Math.round(s * 32767)).buffer);

describe('decodeAudio: WAV variants', () => {
  const tone = speechLike(16000, 0.25);

  it('reads 8-bit unsigned PCM', async () => {
    const data = Uint8Array.from(tone, (s) => Math.round(s * 127) + 128);
    const d = await decodeAudio(wavFile({ tag: 1, bits: 8, channels: 1, rate: 16000, data }), { targetRate: 16000 });
    expect(maxAbsDiff(tone, d.samples)).toBeLessThan(1 / 120);
  });

  it('reads WAVE_FORMAT_EXTENSIBLE and downmixes 6 channels to their mean', async () => {
    const channels = 6;
    const pcm = new Int16Array(tone.length * channels);
    for (let i = 0; i < tone.length; i++) for (let c = 0; c < channels; c++) pcm[i * channels + c] = Math.round(tone[i]! * 32767 * (c % 2 ? 1 : 0.5));
    const d = await decodeAudio(wavFile({ tag: 1, bits: 16, channels, rate: 16000, data: new Uint8Array(pcm.buffer), extensible: true }), {
      targetRate: 16000,
    });
    expect(d.sourceChannels).toBe(6);
    expect(
      maxAbsDiff(
        tone.map((s) => s * 0.75),
        d.samples,
      ),
    ).toBeLessThan(2 / 32768);
  });

  it('skips unknown chunks, including odd-sized ones with their pad byte', async () => {
    const list = new Uint8Array([0x4c, 0x49, 0x53, 0x54, 3, 0, 0, 0, 1, 2, 3, 0]); // "LIST", size 3, + pad
    const d = await decodeAudio(wavFile({ tag: 1, bits: 16, channels: 1, rate: 16000, data: int16Bytes(tone), before: list }), { targetRate: 16000 });
    expect(maxAbsDiff(tone, d.samples)).toBeLessThan(2 / 32768);
  });

  it.each([0, 0xffffffff])('reads to the end of the file when the data size is the streaming placeholder %i', async (dataSize) => {
    const d = await decodeAudio(wavFile({ tag: 1, bits: 16, channels: 1, rate: 16000, data: int16Bytes(tone), dataSize }), { targetRate: 16000 });
    expect(d.samples.length).toBe(tone.length);
  });

  it('refuses WAV codecs it cannot decode (MS ADPCM) as unsupported, naming the format', async () => {
    const error = await decodeAudio(wavFile({ tag: 2, bits: 4, channels: 1, rate: 16000, data: new Uint8Array(256) }), { targetRate: 16000 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AudioDecodeError);
    expect(error).toMatchObject({ kind: 'unsupported', message: expect.stringMatching(/looks like WAV.*0x2/) });
  });
});

const tooLong = (p: Promise<unknown>) => expect(p).rejects.toMatchObject({ kind: 'too_long', name: 'AudioDecodeError' });

describe('decodeAudio: duration limit', () => {
  it('refuses a long WAV from its header alone, without reading the samples', async () => {
    // 10 minutes of float samples that are all NaN: decoding any of them would answer 'corrupt' instead.
    const data = new Uint8Array(8000 * 600 * 4).fill(0xff);
    await tooLong(decodeAudio(wavFile({ tag: 3, bits: 32, channels: 1, rate: 8000, data }), { targetRate: 16000, maxDurationSeconds: 60 }));
  });

  it('refuses FLAC, Ogg and MP4 on the duration their headers declare, before decoding', async () => {
    const input = [speechLike(16000, 2)];
    for (const [args, ext] of [
      [['-c:a', 'flac'], 'flac'],
      [['-c:a', 'libopus'], 'ogg'],
      [['-c:a', 'aac'], 'm4a'],
    ] as const) {
      const bytes = await encodeWithFfmpeg(input, 16000, [...args], ext);
      await tooLong(decodeAudio(bytes, { targetRate: 16000, maxDurationSeconds: 1 }));
    }
  });

  it('stops decoding a stream that declares no duration (ADTS) soon after it passes the limit', async () => {
    const second = await encodeWithFfmpeg([speechLike(16000, 1)], 16000, ['-c:a', 'aac', '-f', 'adts'], 'aac');
    const long = new Uint8Array(second.length * 180); // 3 minutes: ADTS frames simply concatenate
    for (let i = 0; i < 180; i++) long.set(second, i * second.length);
    const full = await decodeAudio(long, { targetRate: 16000 });
    expect(full.durationSeconds).toBeGreaterThan(179);
    // The error says how much had been decoded when it stopped: a few chunks past 10 s, far from the 180 s.
    const error = await decodeAudio(long, { targetRate: 16000, maxDurationSeconds: 10 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'too_long' });
    const stoppedAt = Number(/decoding stopped at ([\d.]+) s/.exec((error as Error).message)?.[1]);
    expect(stoppedAt).toBeGreaterThan(10);
    expect(stoppedAt).toBeLessThan(30);
  });

  it('accepts audio exactly at the limit despite codec padding, and refuses it 0.3 s over', async () => {
    const input = [speechLike(16000, 1)];
    for (const [args, ext] of [
      [['-c:a', 'pcm_s16le'], 'wav'],
      [['-c:a', 'libopus'], 'webm'],
      [['-c:a', 'aac'], 'm4a'],
      [['-c:a', 'libmp3lame'], 'mp3'],
    ] as const) {
      const bytes = await encodeWithFfmpeg(input, 16000, [...args], ext);
      await expect(decodeAudio(bytes, { targetRate: 16000, maxDurationSeconds: 1 })).resolves.toBeDefined();
      await tooLong(decodeAudio(bytes, { targetRate: 16000, maxDurationSeconds: 0.7 }));
    }
  });
});
