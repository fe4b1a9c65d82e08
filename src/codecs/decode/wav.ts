/**
 * WAV (RIFF, RF64/BW64) header parsing and sample decoding to mono Float32.
 *
 * Our own rather than audio-decode's WAV decoder because that one reads only `RIFF` files, skips no
 * pad byte after odd-sized chunks, trusts `blockAlign` (0 or a wrong value from a lying header is not
 * caught), and gives no header-only pass; we need the header alone to refuse a too-long upload before
 * decoding it. Formats: integer PCM 8 (unsigned)/16/24/32-bit, float 32/64-bit, A-law (6), μ-law (7),
 * and WAVE_FORMAT_EXTENSIBLE wrapping any of them; any channel count.
 *
 * Lying lengths: a data size of 0 or 0xFFFFFFFF (streaming writers that never seek back) means "to the
 * end of the file"; a size larger than the file means "what is there", cut to whole sample frames.
 */
import alawmulaw from 'alawmulaw';
import { AudioDecodeError } from '../types.js';

export type WavEncoding = 'pcm' | 'float' | 'alaw' | 'mulaw';

export interface WavHeader {
  encoding: WavEncoding;
  bitsPerSample: number;
  /** Bytes per sample of one channel as stored (bits rounded up to whole bytes). */
  bytesPerSample: number;
  channels: number;
  sampleRate: number;
  /** Byte offset of the first sample frame. */
  dataOffset: number;
  /** Whole sample frames present in the bytes (what the header declares, cut to what the file holds). */
  frames: number;
  durationSeconds: number;
}

const MIN_RATE = 1000;
const MAX_RATE = 384_000;
const FORMAT_TAGS: Record<number, WavEncoding> = { 1: 'pcm', 3: 'float', 6: 'alaw', 7: 'mulaw' };

const ascii = (b: Uint8Array, at: number): string => String.fromCharCode(b[at]!, b[at + 1]!, b[at + 2]!, b[at + 3]!);
function fail(kind: 'corrupt' | 'truncated' | 'unsupported', why: string): never {
  throw new AudioDecodeError(kind, `The file looks like WAV but ${why}.`);
}

interface FmtChunk {
  tag: number;
  channels: number;
  sampleRate: number;
  blockAlign: number;
  bits: number;
}

function readFmt(view: DataView, at: number, size: number): FmtChunk {
  if (size < 16) fail('corrupt', `its fmt chunk is only ${size} bytes`);
  let tag = view.getUint16(at, true);
  if (tag === 0xfffe) {
    // WAVE_FORMAT_EXTENSIBLE: the real format tag is the first two bytes of the SubFormat GUID at +24.
    if (size < 40) fail('corrupt', 'its WAVE_FORMAT_EXTENSIBLE fmt chunk is too short');
    tag = view.getUint16(at + 24, true);
  }
  return {
    tag,
    channels: view.getUint16(at + 2, true),
    sampleRate: view.getUint32(at + 4, true),
    blockAlign: view.getUint16(at + 12, true),
    bits: view.getUint16(at + 14, true),
  };
}

/** Reads the chunk list up to the data chunk and validates the format. Throws AudioDecodeError. */
export function parseWavHeader(b: Uint8Array): WavHeader {
  if (b.length < 12) fail('truncated', 'it ends inside its RIFF header');
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const rf64 = ascii(b, 0) !== 'RIFF';
  let ds64DataSize: number | undefined;
  let fmt: FmtChunk | undefined;
  let pos = 12;
  for (;;) {
    if (pos + 8 > b.length) fail('truncated', fmt ? 'it ends before its data chunk' : 'it ends before its fmt chunk');
    const id = ascii(b, pos);
    const size = view.getUint32(pos + 4, true);
    const body = pos + 8;
    if (id === 'ds64' && rf64 && size >= 24 && body + 24 <= b.length) {
      // 64-bit sizes; beyond 2^53 is not a file anyone can upload, so Number is exact enough.
      ds64DataSize = view.getUint32(body + 8, true) + view.getUint32(body + 12, true) * 2 ** 32;
    } else if (id === 'fmt ') {
      if (body + Math.min(size, 40) > b.length) fail('truncated', 'it ends inside its fmt chunk');
      fmt = readFmt(view, body, size);
    } else if (id === 'data') {
      if (!fmt) fail('corrupt', 'its data chunk comes before any fmt chunk');
      return finish(fmt, body, size === 0xffffffff && ds64DataSize !== undefined ? ds64DataSize : size, b.length);
    }
    pos = body + size + (size & 1); // chunks are padded to an even length
  }
}

function finish(fmt: FmtChunk, dataOffset: number, declared: number, fileLength: number): WavHeader {
  const encoding = FORMAT_TAGS[fmt.tag];
  if (!encoding) fail('unsupported', `its sample format 0x${fmt.tag.toString(16)} is not supported (PCM, float, A-law and μ-law are)`);
  const { channels, sampleRate, bits } = fmt;
  if (channels < 1) fail('corrupt', 'its header declares 0 channels');
  if (!(sampleRate >= MIN_RATE && sampleRate <= MAX_RATE)) fail('unsupported', `its sample rate ${sampleRate} Hz is outside ${MIN_RATE}–${MAX_RATE} Hz`);
  const okBits = encoding === 'pcm' ? bits >= 1 && bits <= 32 : encoding === 'float' ? bits === 32 || bits === 64 : bits === 8;
  if (!okBits) fail('unsupported', `${bits}-bit ${encoding} samples are not supported`);
  const bytesPerSample = Math.ceil(bits / 8);
  // blockAlign is redundant with channels × bytes per sample; a header where they disagree is lying about one.
  if (fmt.blockAlign !== channels * bytesPerSample) {
    fail('corrupt', `its block size ${fmt.blockAlign} does not match ${channels} channel(s) of ${bits}-bit samples`);
  }
  const available = fileLength - dataOffset;
  const streaming = declared === 0 || declared === 0xffffffff;
  const dataBytes = streaming ? available : Math.min(declared, available);
  const frames = Math.floor(dataBytes / fmt.blockAlign);
  return {
    encoding,
    bitsPerSample: bits,
    bytesPerSample,
    channels,
    sampleRate,
    dataOffset,
    frames,
    durationSeconds: frames / sampleRate,
  };
}

/** Scale of signed integer samples held in `bytes` bytes: full scale is ±2^(8·bytes−1). */
const intScale = (bytes: number): number => 1 / 2 ** (8 * bytes - 1);

/** One channel-interleaved sample at byte `at`, as a float (integers scaled to [-1, 1)). */
function sampleReader(h: WavHeader, view: DataView, b: Uint8Array): (at: number) => number {
  const scale = intScale(h.bytesPerSample);
  if (h.encoding === 'float') return h.bitsPerSample === 32 ? (at) => view.getFloat32(at, true) : (at) => view.getFloat64(at, true);
  switch (h.bytesPerSample) {
    case 1:
      return (at) => (b[at]! - 128) / 128; // 8-bit WAV is unsigned
    case 2:
      return (at) => view.getInt16(at, true) * scale;
    case 3:
      return (at) => (((b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16)) << 8) >> 8) * scale;
    default:
      return (at) => view.getInt32(at, true) * scale;
  }
}

/**
 * Decodes sample frames [from, to) of the header's frames and downmixes them to mono (mean of the
 * channels); by default all of them. Float samples that are NaN or infinite make the file 'corrupt': they
 * would poison the resampler and the models.
 */
export function decodeWavToMono(b: Uint8Array, h: WavHeader, from = 0, to = h.frames): Float32Array {
  const { channels, dataOffset } = h;
  const frames = Math.max(0, Math.min(to, h.frames) - from);
  const out = new Float32Array(frames);
  const frameBytes = channels * h.bytesPerSample;
  const start = dataOffset + from * frameBytes;
  if (h.encoding === 'alaw' || h.encoding === 'mulaw') {
    const codes = b.subarray(start, start + frames * frameBytes);
    const pcm = (h.encoding === 'alaw' ? alawmulaw.alaw : alawmulaw.mulaw).decode(codes);
    for (let f = 0, k = 0; f < frames; f++) {
      let sum = 0;
      for (let c = 0; c < channels; c++) sum += pcm[k++]!;
      out[f] = sum / (channels * 32768);
    }
    return out;
  }
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const read = sampleReader(h, view, b);
  const step = h.bytesPerSample;
  let at = start;
  for (let f = 0; f < frames; f++) {
    let sum = 0;
    for (let c = 0; c < channels; c++, at += step) sum += read(at);
    out[f] = channels === 1 ? sum : sum / channels;
    // Checked after the store: a float64 sample beyond float32's range becomes Infinity there.
    if (!Number.isFinite(out[f]!)) {
      throw new AudioDecodeError('corrupt', `The file looks like WAV but sample frame ${from + f} is not a finite number.`);
    }
  }
  return out;
}
