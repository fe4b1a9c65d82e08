/**
 * Tells what an upload is from its first bytes — never from its file name or Content-Type, which clients
 * get wrong (a browser's "audio.mp3" that is really WebM/Opus is common). The answer picks the decoder
 * and names the format in error messages. Anything not recognised is `null`, which callers turn into
 * AudioDecodeError('unsupported').
 */

export type ContainerKind = 'wav' | 'mp3' | 'ogg-opus' | 'ogg-vorbis' | 'ogg-flac' | 'flac' | 'webm' | 'mp4' | 'adts';

export interface DetectedContainer {
  kind: ContainerKind;
  /** Human name for messages: "WAV", "RF64 WAV", "MP3", "Ogg/Opus", "Matroska", "MP4/M4A"… */
  label: string;
  /** Where the audio stream starts (past a leading ID3v2 tag for mp3/adts/flac), in bytes. */
  offset: number;
}

const ascii = (b: Uint8Array, at: number, n: number): string => {
  let s = '';
  for (let i = 0; i < n && at + i < b.length; i++) s += String.fromCharCode(b[at + i]!);
  return s;
};

const u32be = (b: Uint8Array, at: number): number => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;

/** Size of an ID3v2 tag at `at` (header, body and optional footer), or 0 when there is none. */
export function id3v2Size(b: Uint8Array, at = 0): number {
  if (b.length < at + 10 || ascii(b, at, 3) !== 'ID3') return 0;
  // The size is "synchsafe": four 7-bit groups.
  const size = ((b[at + 6]! & 0x7f) << 21) | ((b[at + 7]! & 0x7f) << 14) | ((b[at + 8]! & 0x7f) << 7) | (b[at + 9]! & 0x7f);
  return 10 + size + (b[at + 5]! & 0x10 ? 10 : 0);
}

const MPEG_BITRATES_KBPS: Record<string, readonly number[]> = {
  // [version-group][layer] → kbps by index 1..14 (index 0 "free" and 15 "bad" are refused).
  v1l1: [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
  v1l2: [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
  v1l3: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  v2l1: [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
  v2l2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  v2l3: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
const MPEG_RATES = [44100, 48000, 32000];

/** Length in bytes of the MPEG audio frame whose header is at `at`, or 0 when it is not a valid header. */
export function mpegFrameLength(b: Uint8Array, at: number): number {
  if (at + 4 > b.length || b[at] !== 0xff || (b[at + 1]! & 0xe0) !== 0xe0) return 0;
  const versionBits = (b[at + 1]! >> 3) & 3; // 0 = 2.5, 1 = reserved, 2 = v2, 3 = v1
  const layerBits = (b[at + 1]! >> 1) & 3; // 0 = reserved (ADTS uses it), 1 = III, 2 = II, 3 = I
  const bitrateIndex = b[at + 2]! >> 4;
  const rateIndex = (b[at + 2]! >> 2) & 3;
  if (versionBits === 1 || layerBits === 0 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) return 0;
  if (versionBits === 0 && layerBits !== 1) return 0; // MPEG 2.5 exists only for layer III
  const layer = 4 - layerBits;
  const v1 = versionBits === 3;
  const kbps = MPEG_BITRATES_KBPS[`${v1 ? 'v1' : 'v2'}l${layer}`]![bitrateIndex]!;
  const rate = MPEG_RATES[rateIndex]! / (v1 ? 1 : versionBits === 2 ? 2 : 4);
  const padding = (b[at + 2]! >> 1) & 1;
  if (layer === 1) return (Math.floor((12 * kbps * 1000) / rate) + padding) * 4;
  const samplesPerFrame = layer === 3 && !v1 ? 576 : 1152;
  return Math.floor(((samplesPerFrame / 8) * kbps * 1000) / rate) + padding;
}

/** Length of the ADTS (AAC) frame at `at`, or 0 when the header is not valid ADTS. */
export function adtsFrameLength(b: Uint8Array, at: number): number {
  if (at + 7 > b.length || b[at] !== 0xff || (b[at + 1]! & 0xf6) !== 0xf0) return 0; // sync 0xFFF, layer 00
  const rateIndex = (b[at + 2]! >> 2) & 0xf;
  if (rateIndex > 12) return 0;
  const length = ((b[at + 3]! & 0x03) << 11) | (b[at + 4]! << 3) | (b[at + 5]! >> 5);
  return length >= 7 ? length : 0;
}

/**
 * True when a frame parser finds a valid frame at `at` followed by another valid one or by the exact end
 * of the bytes: a lone sync word with plausible header bits turns up in random data far too often (about
 * one buffer in a hundred starting with 0xFF) to trust. A first frame cut by the end of the bytes counts
 * only when `cutOk` (a leading ID3 tag already says this is an MPEG-family file).
 */
function framesChain(b: Uint8Array, at: number, frameLength: (b: Uint8Array, at: number) => number, sameMask: number, cutOk: boolean): boolean {
  const first = frameLength(b, at);
  if (!first) return false;
  const next = at + first;
  if (next === b.length) return true;
  if (next > b.length) return cutOk;
  // The next header must also be valid and describe the same stream: same second byte (version, layer,
  // CRC flag) and the same `sameMask` bits of the third (the sample-rate index, and ADTS's profile).
  const sameStream = b[next + 1] === b[at + 1] && (b[next + 2]! & sameMask) === (b[at + 2]! & sameMask);
  return sameStream && frameLength(b, next) > 0;
}

function detectOgg(b: Uint8Array): DetectedContainer | null {
  // First page: 27-byte header, segment table, then the first packet, which names the codec.
  if (b.length < 28) return { kind: 'ogg-opus', label: 'Ogg', offset: 0 }; // too short to tell; decoding will say truncated
  const packet = 27 + b[26]!;
  const head = ascii(b, packet, 8);
  if (head === 'OpusHead') return { kind: 'ogg-opus', label: 'Ogg/Opus', offset: 0 };
  if (b[packet] === 0x01 && ascii(b, packet + 1, 6) === 'vorbis') return { kind: 'ogg-vorbis', label: 'Ogg/Vorbis', offset: 0 };
  if (b[packet] === 0x7f && ascii(b, packet + 1, 4) === 'FLAC') return { kind: 'ogg-flac', label: 'Ogg/FLAC', offset: 0 };
  return null; // Speex, Theora, … in Ogg: not decodable here
}

/** EBML header: DocType (element 0x4282) says "webm" or "matroska"; both go to the same demuxer. */
function detectEbml(b: Uint8Array): DetectedContainer {
  const end = Math.min(b.length, 64);
  for (let i = 4; i + 3 < end; i++) {
    if (b[i] === 0x42 && b[i + 1] === 0x82) {
      const size = b[i + 2]! & 0x7f; // one-byte EBML size (0x80 | n), which is what every muxer writes here
      if (ascii(b, i + 3, size).startsWith('matroska')) return { kind: 'webm', label: 'Matroska', offset: 0 };
      break;
    }
  }
  return { kind: 'webm', label: 'WebM', offset: 0 };
}

/** ISO BMFF: `ftyp` first, or (old QuickTime) a moov/mdat/free/wide/skip box with a plausible size. */
function isMp4(b: Uint8Array): boolean {
  if (b.length < 8) return false;
  const type = ascii(b, 4, 4);
  if (type === 'ftyp') return true;
  const size = u32be(b, 0);
  return ['moov', 'mdat', 'free', 'wide', 'skip'].includes(type) && (size === 0 || size === 1 || size >= 8);
}

/** Identifies the container from the bytes alone, or returns null when it is not one this server decodes. */
export function detectContainer(bytes: Uint8Array): DetectedContainer | null {
  const b = bytes;
  if (b.length < 4) return null;
  const magic = ascii(b, 0, 4);
  if ((magic === 'RIFF' || magic === 'RF64' || magic === 'BW64') && ascii(b, 8, 4) === 'WAVE') {
    return { kind: 'wav', label: magic === 'RIFF' ? 'WAV' : `${magic} WAV`, offset: 0 };
  }
  if (magic === 'fLaC') return { kind: 'flac', label: 'FLAC', offset: 0 };
  if (magic === 'OggS') return detectOgg(b);
  if (u32be(b, 0) === 0x1a45dfa3) return detectEbml(b);
  if (isMp4(b)) return { kind: 'mp4', label: 'MP4/M4A', offset: 0 };

  // Raw frame streams, possibly behind ID3v2 tags (several, sometimes; tools also put them before FLAC and AAC).
  let start = 0;
  for (let size = id3v2Size(b); size > 0; size = id3v2Size(b, start)) start += size;
  if (start > 0 && start >= b.length) return { kind: 'mp3', label: 'MP3', offset: start }; // tags and nothing after them
  if (ascii(b, start, 4) === 'fLaC') return { kind: 'flac', label: 'FLAC', offset: start };
  if (framesChain(b, start, adtsFrameLength, 0xfc, start > 0)) return { kind: 'adts', label: 'AAC (ADTS)', offset: start };
  if (framesChain(b, start, mpegFrameLength, 0x0c, start > 0)) return { kind: 'mp3', label: 'MP3', offset: start };
  return null;
}
