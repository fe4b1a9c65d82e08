/**
 * ADTS (Audio Data Transport Stream) framing for the AAC encoders: cuts the byte stream ffmpeg writes into
 * whole frames (a frame may arrive split over any number of pipe reads), strips the 7/9-byte headers to get
 * the raw access units that an MP4 `mdat` holds, and builds the AudioSpecificConfig that the MP4 `esds`
 * carries instead of per-frame headers.
 *
 * ADTS header layout (ISO/IEC 13818-7 §6.2), the fields we read:
 *   syncword 12 bits (0xFFF) | id 1 | layer 2 | protection_absent 1 | profile 2 | sampling_frequency_index 4 |
 *   private 1 | channel_configuration 3 | original 1 | home 1 | copyright bits 2 | frame_length 13 |
 *   buffer_fullness 11 | number_of_raw_data_blocks_in_frame 2 | (crc 16 when protection_absent = 0)
 */

/** Sampling frequency table shared by ADTS and AudioSpecificConfig (index → Hz). */
export const AAC_SAMPLE_RATES: readonly number[] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350];

/** MPEG-4 Audio Object Type of AAC Low Complexity, the only profile we produce. */
export const AOT_AAC_LC = 2;

export interface AdtsHeader {
  /** 7 without CRC, 9 with. */
  headerLength: number;
  /** Whole frame, header included. */
  frameLength: number;
  /** MPEG-4 audio object type (ADTS profile + 1): 2 = AAC-LC. */
  objectType: number;
  sampleRate: number;
  channels: number;
  /** Raw data blocks in this frame (1 for everything ffmpeg writes). */
  rawDataBlocks: number;
}

/** Parses the header at `offset`, or returns null when there is no valid header there (or too few bytes). */
export function parseAdtsHeader(bytes: Uint8Array, offset = 0): AdtsHeader | null {
  if (bytes.length - offset < 7) return null;
  const b0 = bytes[offset]!;
  const b1 = bytes[offset + 1]!;
  const b2 = bytes[offset + 2]!;
  const b3 = bytes[offset + 3]!;
  const b4 = bytes[offset + 4]!;
  const b5 = bytes[offset + 5]!;
  const b6 = bytes[offset + 6]!;
  // Syncword 0xFFF and layer 00 (the layer bits are always zero in ADTS; checking them rejects MP3 sync).
  if (b0 !== 0xff || (b1 & 0xf6) !== 0xf0) return null;
  const headerLength = (b1 & 0x01) === 1 ? 7 : 9;
  const sampleRate = AAC_SAMPLE_RATES[(b2 >> 2) & 0x0f];
  const frameLength = ((b3 & 0x03) << 11) | (b4 << 3) | (b5 >> 5);
  if (sampleRate === undefined || frameLength < headerLength) return null;
  return {
    headerLength,
    frameLength,
    objectType: (b2 >> 6) + 1,
    sampleRate,
    channels: ((b2 & 0x01) << 2) | (b3 >> 6),
    rawDataBlocks: (b6 & 0x03) + 1,
  };
}

/**
 * Incremental ADTS frame splitter: push() any slice of the stream, get back the frames completed by it.
 * Bytes that do not start a valid header are skipped up to the next syncword (ffmpeg never writes such
 * bytes, but a desynchronised stream must not wedge the parser), and counted in `skippedBytes`.
 */
export class AdtsParser {
  private pending: Uint8Array = new Uint8Array(0);
  /** Bytes discarded while looking for a syncword. */
  skippedBytes = 0;

  /** Bytes held back: the start of a frame whose end has not arrived yet. */
  get bufferedBytes(): number {
    return this.pending.length;
  }

  push(chunk: Uint8Array): Uint8Array[] {
    let data = chunk;
    if (this.pending.length > 0) {
      data = new Uint8Array(this.pending.length + chunk.length);
      data.set(this.pending, 0);
      data.set(chunk, this.pending.length);
    }
    const frames: Uint8Array[] = [];
    let offset = 0;
    while (data.length - offset >= 7) {
      const header = parseAdtsHeader(data, offset);
      if (header === null) {
        const next = findSync(data, offset + 1);
        this.skippedBytes += next - offset;
        offset = next;
        continue;
      }
      if (data.length - offset < header.frameLength) break;
      // slice() copies, so callers may keep frames while the chunk's buffer is reused by the stream.
      frames.push(data.slice(offset, offset + header.frameLength));
      offset += header.frameLength;
    }
    this.pending = offset === data.length ? new Uint8Array(0) : data.slice(offset);
    return frames;
  }
}

function findSync(data: Uint8Array, from: number): number {
  for (let i = from; i < data.length - 1; i++) {
    if (data[i] === 0xff && (data[i + 1]! & 0xf6) === 0xf0) return i;
  }
  // Keep a trailing 0xFF: it may be the first half of a syncword split across chunks.
  return data.length > from && data[data.length - 1] === 0xff ? data.length - 1 : Math.max(from, data.length);
}

/** The raw access unit inside one ADTS frame (what MP4 stores as a sample). Throws on a malformed frame. */
export function stripAdtsHeader(frame: Uint8Array): Uint8Array {
  const header = parseAdtsHeader(frame);
  if (header === null || header.frameLength !== frame.length) throw new Error('not a single complete ADTS frame');
  // Several raw data blocks per frame would need splitting per the header's CRC layout; ffmpeg writes one.
  if (header.rawDataBlocks !== 1) throw new Error(`ADTS frame with ${header.rawDataBlocks} raw data blocks is not supported`);
  return frame.subarray(header.headerLength);
}

/**
 * AudioSpecificConfig (ISO/IEC 14496-3 §1.6.2.1) for a plain object type / rate / channel layout:
 * 5 bits object type, 4 bits frequency index, 4 bits channel configuration, then GASpecificConfig's three
 * zero bits (frameLengthFlag = 1024-sample frames, dependsOnCoreCoder = 0, extensionFlag = 0).
 * AAC-LC, 24 kHz, mono gives 0x13 0x08.
 */
export function audioSpecificConfig(sampleRate = 24000, channels = 1, objectType = AOT_AAC_LC): Uint8Array {
  const index = AAC_SAMPLE_RATES.indexOf(sampleRate);
  if (index < 0) throw new RangeError(`no AAC sampling frequency index for ${sampleRate} Hz`);
  if (objectType < 1 || objectType > 30) throw new RangeError(`unsupported audio object type ${objectType}`);
  if (channels < 1 || channels > 7) throw new RangeError(`unsupported channel count ${channels}`);
  const bits = (objectType << 11) | (index << 7) | (channels << 3);
  return Uint8Array.of(bits >> 8, bits & 0xff);
}
