/**
 * Container detection from bytes alone: every format ffmpeg produces, the variants clients send (ID3
 * tags, RF64, Matroska vs WebM, MP4 with its index at the end, QuickTime without `ftyp`), and refusal of
 * everything else — including random bytes, which must not pass for an MPEG or ADTS frame stream.
 */
import { describe, expect, it } from 'vitest';
import { detectContainer } from '../../../src/codecs/decode/detect-container.js';
import { FFMPEG_FORMATS, encodeWithFfmpeg } from './helpers/ffmpeg.js';
import { prng, speechLike } from './helpers/signals.js';

const bytesOf = (...parts: (string | number[] | Uint8Array)[]): Uint8Array => {
  const arrays = parts.map((p) => (typeof p === 'string' ? new TextEncoder().encode(p) : Uint8Array.from(p)));
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
};

/** An ID3v2.4 tag with `size` bytes of body (synchsafe size). */
const id3 = (size: number): Uint8Array =>
  bytesOf('ID3', [4, 0, 0, (size >> 21) & 0x7f, (size >> 14) & 0x7f, (size >> 7) & 0x7f, size & 0x7f], new Uint8Array(size));

const signal = [speechLike(16000, 0.2)];

describe('detectContainer: what ffmpeg writes', () => {
  it.each(FFMPEG_FORMATS.map((f) => [f.name, f] as const))('%s is recognised as its container', async (_name, format) => {
    const bytes = await format.encode(signal, 16000);
    expect(detectContainer(bytes)?.kind).toBe(format.container);
  });

  it('tells Matroska from WebM by DocType but sends both to the same decoder', async () => {
    const mka = await encodeWithFfmpeg(signal, 16000, ['-c:a', 'libopus'], 'mka');
    expect(detectContainer(mka)).toMatchObject({ kind: 'webm', label: 'Matroska' });
    const webm = await encodeWithFfmpeg(signal, 16000, ['-c:a', 'libopus'], 'webm');
    expect(detectContainer(webm)).toMatchObject({ kind: 'webm', label: 'WebM' });
  });

  it('recognises an MP4 whose moov box comes after mdat (no faststart)', async () => {
    const m4a = await encodeWithFfmpeg(signal, 16000, ['-c:a', 'aac'], 'm4a');
    const text = Buffer.from(m4a).toString('latin1');
    expect(text.indexOf('moov')).toBeGreaterThan(text.indexOf('mdat'));
    expect(detectContainer(m4a)?.kind).toBe('mp4');
  });
});

describe('detectContainer: variants', () => {
  it('skips an ID3v2 tag before MP3, FLAC and ADTS streams and reports where the audio starts', async () => {
    const mp3 = await encodeWithFfmpeg(signal, 16000, ['-c:a', 'libmp3lame', '-id3v2_version', '0'], 'mp3'); // no tag of ffmpeg's own
    const tagged = bytesOf(id3(300), mp3);
    expect(detectContainer(tagged)).toMatchObject({ kind: 'mp3', offset: 310 });
    expect(detectContainer(bytesOf(id3(20), 'fLaC', new Uint8Array(40)))).toMatchObject({ kind: 'flac', offset: 30 });
    const adts = await encodeWithFfmpeg(signal, 16000, ['-c:a', 'aac', '-f', 'adts'], 'aac');
    expect(detectContainer(bytesOf(id3(5), adts))).toMatchObject({ kind: 'adts', offset: 15 });
  });

  it('calls a file that is only an ID3 tag MP3 (decoding then reports it truncated)', () => {
    expect(detectContainer(id3(100))?.kind).toBe('mp3');
  });

  it('recognises RF64 and BW64 as WAV', () => {
    expect(detectContainer(bytesOf('RF64', [255, 255, 255, 255], 'WAVE', 'ds64'))).toMatchObject({ kind: 'wav', label: 'RF64 WAV' });
    expect(detectContainer(bytesOf('BW64', [255, 255, 255, 255], 'WAVE'))?.kind).toBe('wav');
  });

  it('recognises QuickTime-style MP4 that starts with mdat or moov instead of ftyp', () => {
    expect(detectContainer(bytesOf([0, 0, 0, 16], 'mdat', new Uint8Array(8)))?.kind).toBe('mp4');
    expect(detectContainer(bytesOf([0, 0, 0, 8], 'moov'))?.kind).toBe('mp4');
  });

  it('tells ADTS (layer 00) from MPEG audio (layer ≠ 00) by the same 0xFFF sync', () => {
    // Two back-to-back frames of each, headers only (the detector checks the chain, not the payload).
    const adtsFrame = [0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc, ...new Array(9).fill(0)]; // 16-byte frame
    expect(detectContainer(bytesOf(adtsFrame, adtsFrame))?.kind).toBe('adts');
    // MPEG-1 layer III, 128 kbps, 44.1 kHz, no padding: 417-byte frames.
    const mp3Frame = [0xff, 0xfb, 0x90, 0x00, ...new Array(413).fill(0)];
    expect(detectContainer(bytesOf(mp3Frame, mp3Frame))?.kind).toBe('mp3');
  });
});

describe('detectContainer: refusals', () => {
  it.each([
    ['nothing', new Uint8Array(0)],
    ['three bytes', bytesOf('RIF')],
    ['text', bytesOf('hello, this is not audio at all')],
    ['a PNG', bytesOf([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], new Uint8Array(40))],
    ['an AVI (RIFF but not WAVE)', bytesOf('RIFF', [0, 0, 0, 0], 'AVI LIST', new Uint8Array(40))],
    ['Speex in Ogg', bytesOf('OggS', [0, 2], new Uint8Array(20), [1, 80], 'Speex   ', new Uint8Array(72))],
    ['an MPEG sync word followed by garbage', bytesOf([0xff, 0xfb, 0x90, 0x00], new Uint8Array(413), [1, 2, 3, 4, 5])],
  ])('refuses %s', (_name, bytes) => {
    expect(detectContainer(bytes)).toBeNull();
  });

  it('does not mistake random bytes for any format (10 000 seeded buffers)', () => {
    const random = prng(42);
    let detected = 0;
    for (let i = 0; i < 10_000; i++) {
      const b = new Uint8Array(64 + Math.floor(random() * 2000));
      for (let k = 0; k < b.length; k++) b[k] = Math.floor(random() * 256);
      if (i % 2 === 0) b[0] = 0xff; // half of them start with a sync byte, the most likely false positive
      if (detectContainer(b)) detected++;
    }
    expect(detected).toBe(0);
  });
});
