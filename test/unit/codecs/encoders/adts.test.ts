/**
 * ADTS framing: header fields, frames split across arbitrary (down to 1-byte) chunks, resynchronisation
 * after junk, header stripping for MP4, the AudioSpecificConfig bytes, and a real stream from the bundled
 * ffmpeg (every frame AAC-LC 24 kHz mono, the frame count the encoder's priming implies).
 */

import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { AdtsParser, audioSpecificConfig, parseAdtsHeader, stripAdtsHeader } from '../../../../src/codecs/encoders/adts.js';
import { FFMPEG_AAC_ARGS, resolveFfmpegPath } from '../../../../src/codecs/encoders/ffmpeg-aac-pool.js';

/** Builds one ADTS frame (AAC-LC unless told) around `payload`, with a CRC slot when `crc`. */
function adtsFrame(payload: Uint8Array, { sfi = 6, channels = 1, crc = false } = {}): Uint8Array {
  const headerLength = crc ? 9 : 7;
  const length = headerLength + payload.length;
  const h = new Uint8Array(length);
  h[0] = 0xff;
  h[1] = 0xf0 | (crc ? 0 : 1);
  h[2] = (1 << 6) | (sfi << 2) | (channels >> 2); // profile 1 = LC (object type 2)
  h[3] = ((channels & 3) << 6) | (length >> 11);
  h[4] = (length >> 3) & 0xff;
  h[5] = ((length & 7) << 5) | 0x1f;
  h[6] = 0xfc; // buffer fullness 0x7FF (VBR), one raw data block
  h.set(payload, headerLength);
  return h;
}

function payload(n: number, seed: number): Uint8Array {
  // Payload bytes avoid 0xFF so that only real headers can look like a syncword.
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) % 255);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

describe('parseAdtsHeader', () => {
  it('reads length, profile, rate and channels, with and without CRC', () => {
    const plain = parseAdtsHeader(adtsFrame(payload(100, 1)));
    expect(plain).toEqual({ headerLength: 7, frameLength: 107, objectType: 2, sampleRate: 24000, channels: 1, rawDataBlocks: 1 });
    const withCrc = parseAdtsHeader(adtsFrame(payload(10, 2), { crc: true, sfi: 4, channels: 2 }));
    expect(withCrc).toMatchObject({ headerLength: 9, frameLength: 19, sampleRate: 44100, channels: 2 });
  });

  it('rejects non-headers: short input, no syncword, MP3 layer bits, bad rate index, too-small length', () => {
    const good = adtsFrame(payload(20, 3));
    expect(parseAdtsHeader(good.subarray(0, 6))).toBeNull();
    expect(parseAdtsHeader(Uint8Array.of(0x00, ...good.subarray(1)))).toBeNull();
    expect(parseAdtsHeader(Uint8Array.of(0xff, 0xfb, ...good.subarray(2)))).toBeNull(); // MPEG-1 Layer III sync
    expect(parseAdtsHeader(adtsFrame(payload(20, 3), { sfi: 13 }))).toBeNull();
    const short = adtsFrame(new Uint8Array(0));
    short[4] = 0;
    short[5] = 0x1f; // frame_length 0
    expect(parseAdtsHeader(short)).toBeNull();
  });
});

describe('AdtsParser', () => {
  const frames = [adtsFrame(payload(150, 1)), adtsFrame(payload(1, 2)), adtsFrame(payload(300, 3), { crc: true }), adtsFrame(payload(64, 4))];
  const stream = concat(frames);

  it('returns the same frames when the stream arrives one byte at a time', () => {
    const parser = new AdtsParser();
    const out: Uint8Array[] = [];
    for (let i = 0; i < stream.length; i++) out.push(...parser.push(stream.subarray(i, i + 1)));
    expect(out).toEqual(frames);
    expect(parser.bufferedBytes).toBe(0);
    expect(parser.skippedBytes).toBe(0);
  });

  it('returns the same frames for every chunk size, and only complete frames', () => {
    for (let size = 2; size <= stream.length; size += 13) {
      const parser = new AdtsParser();
      const out: Uint8Array[] = [];
      for (let i = 0; i < stream.length; i += size) out.push(...parser.push(stream.subarray(i, i + size)));
      expect(out).toEqual(frames);
    }
    const parser = new AdtsParser();
    expect(parser.push(stream.subarray(0, 100))).toEqual([]);
    expect(parser.bufferedBytes).toBe(100);
  });

  it('skips junk before a syncword (including a split 0xFF) and counts it', () => {
    const parser = new AdtsParser();
    const junk = Uint8Array.of(1, 2, 3, 0xff, 0x00, 9);
    const out = [...parser.push(concat([junk, frames[0]!.subarray(0, 1)])), ...parser.push(concat([frames[0]!.subarray(1), frames[1]!]))];
    expect(out).toEqual([frames[0], frames[1]]);
    expect(parser.skippedBytes).toBe(junk.length);
  });

  it('hands out copies that later input does not overwrite', () => {
    const parser = new AdtsParser();
    const chunk = new Uint8Array(stream.subarray(0, frames[0]!.length));
    const [frame] = parser.push(chunk);
    chunk.fill(0);
    expect(frame).toEqual(frames[0]);
  });
});

describe('stripAdtsHeader / audioSpecificConfig', () => {
  it('strips 7- and 9-byte headers to the raw access unit', () => {
    expect(stripAdtsHeader(adtsFrame(payload(50, 5)))).toEqual(payload(50, 5));
    expect(stripAdtsHeader(adtsFrame(payload(50, 6), { crc: true }))).toEqual(payload(50, 6));
    expect(() => stripAdtsHeader(adtsFrame(payload(50, 5)).subarray(0, 40))).toThrow(/complete ADTS frame/);
  });

  it('gives 0x13 0x08 for AAC-LC 24 kHz mono (and the known values for other layouts)', () => {
    expect([...audioSpecificConfig()]).toEqual([0x13, 0x08]);
    expect([...audioSpecificConfig(44100, 2)]).toEqual([0x12, 0x10]);
    expect([...audioSpecificConfig(48000, 2)]).toEqual([0x11, 0x90]);
    expect(() => audioSpecificConfig(23000)).toThrow(RangeError);
  });
});

describe('a real ADTS stream from the bundled ffmpeg', () => {
  it('parses into AAC-LC 24 kHz mono frames, ceil((n + 1024) / 1024) of them', () => {
    const n = 30_000;
    const pcm = Buffer.alloc(n * 2);
    for (let i = 0; i < n; i++) pcm.writeInt16LE(Math.round(9000 * Math.sin(i * 0.07) * Math.sin(i * 0.0004)), i * 2);
    const result = spawnSync(resolveFfmpegPath(), [...FFMPEG_AAC_ARGS], { input: pcm, maxBuffer: 1 << 24 });
    expect(result.status, result.stderr.toString()).toBe(0);
    const parser = new AdtsParser();
    const out: Uint8Array[] = [];
    for (let i = 0; i < result.stdout.length; i += 97) out.push(...parser.push(result.stdout.subarray(i, i + 97)));
    expect(parser.bufferedBytes).toBe(0);
    expect(out).toHaveLength(Math.ceil((n + 1024) / 1024));
    for (const frame of out) {
      expect(parseAdtsHeader(frame)).toMatchObject({ objectType: 2, sampleRate: 24000, channels: 1, headerLength: 7, rawDataBlocks: 1 });
    }
  });
});
