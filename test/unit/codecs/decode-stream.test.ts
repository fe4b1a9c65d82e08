/**
 * decodeAudioStream: uploads decoded as a stream of bounded windows. Joined, the windows are the same
 * samples whatever the window size; every format is decoded in bounded blocks (an MP4 with its index at
 * the end included, a FLAC of silence that expands 300-fold included) and loses no frame doing so; the
 * duration limit and corrupt data stop the stream after the windows decoded before them.
 */
import { describe, expect, it } from 'vitest';
import { decodeAudioStream, type DecodeEvent, type DecodeOptions } from '../../../src/codecs/decode/decode-stream.js';
import { decodeCompressedBlocks } from '../../../src/codecs/decode/decode-compressed.js';
import { decodeAudio } from '../../../src/codecs/decode/decode-audio.js';
import { detectContainer } from '../../../src/codecs/decode/detect-container.js';
import { moovFirst } from '../../../src/codecs/decode/mp4-faststart.js';
import { boxes } from '../../../src/codecs/decode/container-probe.js';
import { createFlacEncoder } from '../../../src/codecs/encoders/flac.js';
import { AudioDecodeError } from '../../../src/codecs/types.js';
import { FFMPEG_FORMATS, encodeWithFfmpeg, runFfmpeg } from './helpers/ffmpeg.js';
import { speechLike } from './helpers/signals.js';

interface Collected {
  events: DecodeEvent[];
  windows: Float32Array[];
  joined: Float32Array;
  summary: unknown;
}

async function collect(bytes: Uint8Array, options: DecodeOptions): Promise<Collected> {
  const events: DecodeEvent[] = [];
  const stream = decodeAudioStream(bytes, options);
  for (;;) {
    const step = await stream.next();
    if (step.done) {
      const windows = events.flatMap((e) => (e.type === 'window' ? [e.samples] : []));
      const joined = new Float32Array(windows.reduce((n, w) => n + w.length, 0));
      windows.reduce((at, w) => (joined.set(w, at), at + w.length), 0);
      return { events, windows, joined, summary: step.value };
    }
    events.push(step.value);
  }
}

/** Events until the stream fails; the error. */
async function collectUntilError(bytes: Uint8Array, options: DecodeOptions): Promise<{ windows: number; error: unknown }> {
  let windows = 0;
  try {
    for await (const event of decodeAudioStream(bytes, options)) if (event.type === 'window') windows++;
  } catch (error) {
    return { windows, error };
  }
  throw new Error('the stream did not fail');
}

const ffmpeg = (name: string) => FFMPEG_FORMATS.find((f) => f.name === name)!;

describe('decodeAudioStream: windows', () => {
  const formats = FFMPEG_FORMATS.filter((f) => !['wav s24', 'wav s32', 'wav A-law', 'rf64 s16', 'wav f64 (extensible)'].includes(f.name));

  it.each(formats.map((f) => [f.name, f] as const))('%s: one header, then full windows, joined the same whatever the window size', async (_name, format) => {
    const bytes = await format.encode([speechLike(44100, 6, { seed: 5 })], 44100);
    const whole = await collect(bytes, { targetRate: 16000, windowSamples: 1e9 });
    expect(whole.windows).toHaveLength(1);
    for (const windowSamples of [16000, 12_345, 997]) {
      const got = await collect(bytes, { targetRate: 16000, windowSamples });
      expect(got.events[0]).toMatchObject({ type: 'header', header: { container: format.container } });
      expect(got.events.filter((e) => e.type === 'header')).toHaveLength(1);
      expect(got.windows.slice(0, -1).every((w) => w.length === windowSamples)).toBe(true);
      expect(got.windows.at(-1)!.length).toBeLessThanOrEqual(windowSamples);
      expect(got.joined).toEqual(whole.joined);
      expect(got.summary).toEqual(whole.summary);
    }
  });

  it('reports the duration the header declares (WAV exactly, FLAC STREAMINFO), none for ADTS', async () => {
    const signal = [speechLike(16000, 3)];
    const header = async (name: string) => (await decodeAudioStream(await ffmpeg(name).encode(signal, 16000), { targetRate: 16000 }).next()).value;
    expect(await header('wav s16')).toEqual({ type: 'header', header: { container: 'wav', label: 'WAV', declaredSeconds: 3 } });
    expect(await header('flac')).toMatchObject({ header: { container: 'flac', declaredSeconds: 3 } });
    expect(await header('adts aac')).toEqual({ type: 'header', header: { container: 'adts', label: 'AAC (ADTS)' } });
  });
});

describe('decodeAudioStream: bounded decoding, no frame lost', () => {
  /** Largest block (values = frames × channels of the source) the decoder produced in one call. */
  async function largestBlock(bytes: Uint8Array): Promise<{ largest: number; frames: number }> {
    let largest = 0;
    let frames = 0;
    for await (const block of decodeCompressedBlocks(bytes, detectContainer(bytes)!)) {
      largest = Math.max(largest, block.samples.length * block.channels);
      frames += block.samples.length;
    }
    return { largest, frames };
  }

  it('decodes 10 minutes of FLAC silence (300 values per byte) in blocks of at most 2^20 values, every frame kept', async () => {
    // ffmpeg's FLAC of digital silence: 4608-sample frames of ~14 bytes. audio-decode's own FLAC parser drops
    // a frame whose header straddles two fed chunks, so the duration used to come out short.
    const silence = new Uint8Array(await runFfmpeg(['-f', 'lavfi', '-i', 'anullsrc=r=44100:cl=stereo', '-t', '600', '-c:a', 'flac', '-f', 'flac', 'pipe:1']));
    expect(silence.length).toBeLessThan(200_000);
    const { largest, frames } = await largestBlock(silence);
    expect(frames).toBe(600 * 44100);
    expect(largest).toBeLessThanOrEqual(1 << 20);
    expect(await decodeAudio(silence, { targetRate: 16000 })).toMatchObject({ durationSeconds: 600, sourceSampleRate: 44100, sourceChannels: 2 });
  }, 60_000);

  it('keeps every frame of a FLAC written by our own encoder (576-sample frames)', async () => {
    const encoder = await createFlacEncoder({ inputRate: 24000 });
    const parts = [await encoder.push(speechLike(24000, 20, { seed: 2 })), await encoder.push(new Float32Array(24000 * 40)), await encoder.flush()];
    const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (bytes.set(p, at), at + p.length), 0);
    expect(await decodeAudio(bytes, { targetRate: 16000 })).toMatchObject({ durationSeconds: 60, sourceSampleRate: 24000 });
  });

  it.each(['m4a aac index at end', 'm4a aac faststart', 'm4a aac fragmented', 'mp3', 'ogg/opus', 'webm/opus', 'adts aac'])(
    '%s: 60 s decode in blocks of at most 2^20 values',
    async (name) => {
      const bytes = await ffmpeg(name).encode([speechLike(48000, 60, { seed: 4 })], 48000);
      const { largest, frames } = await largestBlock(bytes);
      expect(frames).toBeGreaterThan(59 * 48000);
      expect(largest).toBeLessThanOrEqual(1 << 20);
    },
    60_000,
  );

  it('moves an MP4 index in front of its media with the chunk offsets rewritten: same samples as +faststart', async () => {
    const signal = [speechLike(44100, 5, { seed: 8 })];
    const atEnd = await encodeWithFfmpeg(signal, 44100, ['-c:a', 'aac', '-b:a', '96k'], 'm4a');
    const fast = await encodeWithFfmpeg(signal, 44100, ['-c:a', 'aac', '-b:a', '96k', '-movflags', '+faststart'], 'm4a');
    const pieces = moovFirst(atEnd)!;
    expect(pieces.reduce((n, p) => n + p.length, 0)).toBe(atEnd.length);
    // The first piece is the boxes before the media, ending with the moov; the media follows unchanged.
    const head = boxes(pieces[0]!, 0, pieces[0]!.length);
    expect(head.at(-1)).toMatchObject({ type: 'moov', end: pieces[0]!.length });
    expect(head.map((b) => b.type)).not.toContain('mdat');
    expect(boxes(pieces[1]!, 0, pieces[1]!.length)[0]!.type).toBe('mdat');
    expect(moovFirst(fast)).toBeUndefined();
    expect((await collect(atEnd, { targetRate: 16000 })).joined).toEqual((await collect(fast, { targetRate: 16000 })).joined);
  });
});

describe('decodeAudioStream: failures mid-stream', () => {
  it('stops a stream that declares no duration once the decoded audio passes the limit, after the windows before it', async () => {
    const adts = await ffmpeg('adts aac').encode([speechLike(16000, 30)], 16000);
    const { windows, error } = await collectUntilError(adts, { targetRate: 16000, maxDurationSeconds: 12, windowSamples: 16000 });
    expect(error).toBeInstanceOf(AudioDecodeError);
    expect(error).toMatchObject({ kind: 'too_long' });
    // Up to the decoded block that passed the limit: a block is at most 2^18 values (16 s at 16 kHz).
    expect(windows).toBeGreaterThan(0);
    expect(windows).toBeLessThanOrEqual(12);
  });

  it('refuses on the declared duration before any window', async () => {
    const wav = await ffmpeg('wav s16').encode([speechLike(16000, 30)], 16000);
    const { windows, error } = await collectUntilError(wav, { targetRate: 16000, maxDurationSeconds: 12 });
    expect(windows).toBe(0);
    expect(error).toMatchObject({ kind: 'too_long', message: expect.stringContaining('30.0 s') });
  });

  it('fails with corrupt at a non-finite sample, after the windows before it', async () => {
    const f32 = (await ffmpeg('wav f32').encode([speechLike(16000, 10)], 16000)).slice();
    f32.fill(0xff, f32.length - 400);
    const { windows, error } = await collectUntilError(f32, { targetRate: 16000, windowSamples: 16000 });
    expect(error).toMatchObject({ kind: 'corrupt', message: expect.stringContaining('finite') });
    expect(windows).toBeGreaterThanOrEqual(3); // WAV converts 65 536 frames per step: the first steps went out
  });
});
