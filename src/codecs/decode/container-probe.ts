/**
 * Cheap looks into compressed containers, without decoding any audio:
 * - `probeDurationSeconds`: the duration the container declares (FLAC STREAMINFO, the last Ogg page's
 *   granule position, MP4 `mvhd`, an MP3 Xing/Info frame count), so that an upload over the duration
 *   limit is refused before the decoder spends seconds on it. `undefined` when the container does not say
 *   (WebM, ADTS, fragmented MP4, CBR MP3 without an Info frame); decoding then enforces the limit as it goes.
 * - `looksTruncated`: whether the container's own structure runs past the end of the bytes, so that a
 *   decoder failure can be reported as 'truncated' (an upload cut short) rather than 'corrupt'.
 */
import { adtsFrameLength, mpegFrameLength, type DetectedContainer } from './detect-container.js';

const ascii = (b: Uint8Array, at: number, n: number): string => {
  let s = '';
  for (let i = 0; i < n && at + i < b.length; i++) s += String.fromCharCode(b[at + i]!);
  return s;
};
const u32be = (b: Uint8Array, at: number): number => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
const u32le = (b: Uint8Array, at: number): number => ((b[at + 3]! << 24) | (b[at + 2]! << 16) | (b[at + 1]! << 8) | b[at]!) >>> 0;

/** FLAC STREAMINFO (34 bytes at `at`): sample rate (20 bits) and total samples (36 bits, 0 = unknown). */
function streamInfoSeconds(b: Uint8Array, at: number): number | undefined {
  if (at + 18 > b.length) return undefined;
  const rate = (b[at + 10]! << 12) | (b[at + 11]! << 4) | (b[at + 12]! >> 4);
  const total = (b[at + 13]! & 0x0f) * 2 ** 32 + u32be(b, at + 14);
  return rate > 0 && total > 0 ? total / rate : undefined;
}

interface OggPage {
  at: number;
  flags: number;
  granule: number;
  serial: number;
  /** Header + segment table + body, in bytes. */
  length: number;
}

function oggPageAt(b: Uint8Array, at: number): OggPage | undefined {
  if (at + 27 > b.length || ascii(b, at, 4) !== 'OggS' || b[at + 4] !== 0) return undefined;
  const segments = b[at + 26]!;
  let body = 0;
  for (let i = 0; i < segments && at + 27 + i < b.length; i++) body += b[at + 27 + i]!;
  const lo = u32le(b, at + 6);
  const hi = u32le(b, at + 10);
  return {
    at,
    flags: b[at + 5]!,
    granule: lo === 0xffffffff && hi === 0xffffffff ? -1 : hi * 2 ** 32 + lo,
    serial: u32le(b, at + 14),
    length: 27 + segments + body,
  };
}

/** The last Ogg page matching `predicate` that starts in the final 140 000 bytes (two maximal pages of 65 307). */
function lastOggPage(b: Uint8Array, predicate: (p: OggPage) => boolean): OggPage | undefined {
  for (let at = b.length - 27; at >= 0 && at >= b.length - 140_000; at--) {
    if (b[at] !== 0x4f) continue; // 'O'
    const page = oggPageAt(b, at);
    if (page && predicate(page)) return page;
  }
  return undefined;
}

function oggSeconds(b: Uint8Array, c: DetectedContainer): number | undefined {
  const first = oggPageAt(b, 0);
  if (!first) return undefined;
  const packet = 27 + b[26]!;
  let rate: number | undefined;
  let preSkip = 0;
  if (c.kind === 'ogg-opus') {
    rate = 48_000; // Opus granules count 48 kHz samples whatever the input rate was
    preSkip = b[packet + 10]! | (b[packet + 11]! << 8);
  } else if (c.kind === 'ogg-vorbis') {
    rate = u32le(b, packet + 12);
  } else {
    // Ogg FLAC: 0x7F "FLAC" major minor count(2) "fLaC" block-header(4) STREAMINFO
    const info = packet + 13 + 4;
    if (info + 13 <= b.length) rate = (b[info + 10]! << 12) | (b[info + 11]! << 4) | (b[info + 12]! >> 4);
  }
  const last = lastOggPage(b, (p) => p.serial === first.serial && p.granule >= 0);
  if (!rate || !last) return undefined;
  return Math.max(0, last.granule - preSkip) / rate;
}

export interface Box {
  type: string;
  at: number;
  body: number;
  end: number;
}

/** ISO BMFF boxes between `from` and `to`; stops at the first malformed size. `end` may exceed `to` (cut file). */
export function boxes(b: Uint8Array, from: number, to: number): Box[] {
  const out: Box[] = [];
  let at = from;
  while (at + 8 <= to) {
    let size = u32be(b, at);
    let header = 8;
    if (size === 1) {
      if (at + 16 > to) break;
      size = u32be(b, at + 8) * 2 ** 32 + u32be(b, at + 12);
      header = 16;
    } else if (size === 0) {
      size = to - at; // "to the end of the file"
    }
    if (size < header) break;
    out.push({ type: ascii(b, at + 4, 4), at, body: at + header, end: at + size });
    at += size;
  }
  return out;
}

function mp4Seconds(b: Uint8Array): number | undefined {
  const moov = boxes(b, 0, b.length).find((x) => x.type === 'moov');
  if (!moov || moov.end > b.length) return undefined;
  const mvhd = boxes(b, moov.body, moov.end).find((x) => x.type === 'mvhd');
  if (!mvhd || mvhd.body + 32 > b.length) return undefined;
  const v1 = b[mvhd.body] === 1;
  const timescale = u32be(b, mvhd.body + (v1 ? 20 : 12));
  const duration = v1 ? u32be(b, mvhd.body + 24) * 2 ** 32 + u32be(b, mvhd.body + 28) : u32be(b, mvhd.body + 16);
  // Fragmented MP4 leaves the duration 0 (and all-ones means unknown): then the container does not say.
  if (!timescale || !duration || duration === 0xffffffff) return undefined;
  return duration / timescale;
}

/** Xing/Info frame (written by LAME, ffmpeg) in the first MP3 frame: frame count × samples per frame. */
function mp3Seconds(b: Uint8Array, at: number): number | undefined {
  if (!mpegFrameLength(b, at)) return undefined;
  const v1 = ((b[at + 1]! >> 3) & 3) === 3;
  const mono = b[at + 3]! >> 6 === 3;
  const rate = [44100, 48000, 32000][(b[at + 2]! >> 2) & 3]! / (v1 ? 1 : ((b[at + 1]! >> 3) & 3) === 2 ? 2 : 4);
  const tag = at + 4 + (v1 ? (mono ? 17 : 32) : mono ? 9 : 17);
  const id = ascii(b, tag, 4);
  if ((id !== 'Xing' && id !== 'Info') || !(u32be(b, tag + 4) & 1)) return undefined;
  const frames = u32be(b, tag + 8);
  return frames > 0 ? (frames * (v1 ? 1152 : 576)) / rate : undefined;
}

/** The duration the container declares, in seconds, or undefined where it does not declare one. */
export function probeDurationSeconds(b: Uint8Array, c: DetectedContainer): number | undefined {
  switch (c.kind) {
    case 'flac':
      // "fLaC", then the first metadata block header (4 bytes), which must be STREAMINFO
      return (b[c.offset + 4]! & 0x7f) === 0 ? streamInfoSeconds(b, c.offset + 8) : undefined;
    case 'ogg-opus':
    case 'ogg-vorbis':
    case 'ogg-flac':
      return oggSeconds(b, c);
    case 'mp4':
      return mp4Seconds(b);
    case 'mp3':
      return mp3Seconds(b, c.offset);
    default:
      return undefined;
  }
}

/** Walks frames from `at` and says whether the last one runs past the end of the bytes. */
function framesRunPastEnd(b: Uint8Array, at: number, frameLength: (b: Uint8Array, at: number) => number): boolean {
  if (at >= b.length) return true;
  for (;;) {
    const n = frameLength(b, at);
    if (!n) return at + 4 > b.length && at < b.length; // lost sync: cut only if inside a header
    if (at + n > b.length) return true;
    if (at + n === b.length) return false;
    at += n;
  }
}

/** EBML variable-length integer at `at`: its length in bytes and value (all ones = unknown size → -1). */
function vint(b: Uint8Array, at: number): { length: number; value: number } | undefined {
  const first = b[at];
  if (first === undefined || first === 0) return undefined;
  const length = Math.clz32(first) - 23;
  let value = first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    const byte = b[at + i];
    if (byte === undefined) return undefined;
    value = value * 256 + byte;
    allOnes &&= byte === 0xff;
  }
  return { length, value: allOnes ? -1 : value };
}

/** Whether the container's structure says the bytes were cut short. */
export function looksTruncated(b: Uint8Array, c: DetectedContainer): boolean {
  switch (c.kind) {
    case 'mp4': {
      const top = boxes(b, 0, b.length);
      return !top.some((x) => x.type === 'moov') || top.some((x) => x.end > b.length);
    }
    case 'ogg-opus':
    case 'ogg-vorbis':
    case 'ogg-flac': {
      const last = lastOggPage(b, () => true);
      return !last || last.at + last.length > b.length || !(last.flags & 0x04); // no end-of-stream page
    }
    case 'webm': {
      const header = vint(b, 4);
      if (!header || header.value < 0) return true;
      const segment = 4 + header.length + header.value;
      if (segment + 4 > b.length) return true;
      const size = vint(b, segment + 4);
      return !size || (size.value >= 0 && segment + 4 + size.length + size.value > b.length);
    }
    case 'flac':
      return b.length < c.offset + 42; // "fLaC" + STREAMINFO block: without it nothing can decode
    case 'mp3':
      return framesRunPastEnd(b, c.offset, mpegFrameLength);
    case 'adts':
      return framesRunPastEnd(b, c.offset, adtsFrameLength);
    default:
      return false;
  }
}
