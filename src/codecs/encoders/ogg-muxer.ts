/**
 * Ogg framing (RFC 3533) for one logical stream, plus the Ogg Opus header packets (RFC 7845). No working
 * npm Ogg muxer exists, and the format is small: pages of up to 255 lacing segments, a CRC-32 over each
 * page, 64-bit granule positions, and BOS/EOS/continuation flags. The Opus encoder (opus.ts) decides what
 * goes on which page; this file only gets the bytes right.
 */

import { concatBytes } from './encoder-lifecycle.js';

export const OGG_FLAG_CONTINUED = 0x01;
export const OGG_FLAG_BOS = 0x02;
export const OGG_FLAG_EOS = 0x04;

/** Granule position for a page on which no packet ends (RFC 3533: all bits set). */
export const OGG_NO_GRANULE = -1n;

const PAGE_HEADER_BYTES = 27;
const MAX_SEGMENTS = 255;

/** CRC-32 as Ogg defines it: polynomial 0x04c11db7, MSB first, initial value 0, no final XOR. */
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let bit = 0; bit < 8; bit++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

export function oggCrc32(bytes: Uint8Array, crc = 0): number {
  for (let i = 0; i < bytes.length; i++) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ bytes[i]!) & 0xff]!) >>> 0;
  return crc >>> 0;
}

export interface OggPacket {
  data: Uint8Array;
  /** Granule position after this packet (codec-defined; 48 kHz samples for Opus). */
  granule: bigint;
}

/**
 * Writes pages for one logical bitstream. Each writePackets() call starts a fresh page (RFC 7845 needs
 * OpusHead and OpusTags to start pages, and audio to start on a page after the tags), fills pages to at most
 * 255 segments, and continues packets that do not fit onto following pages.
 */
export class OggStreamWriter {
  private sequence = 0;

  constructor(readonly serial: number) {}

  /** Pages written so far (the next page's sequence number). */
  get pageCount(): number {
    return this.sequence;
  }

  writePackets(packets: readonly OggPacket[], options: { eos?: boolean } = {}): Uint8Array {
    // Lacing: a packet of L bytes is floor(L/255) segments of 255 and one final segment of L % 255 (0 when
    // L is a multiple of 255 — that terminating short segment is how a reader knows the packet ended).
    const lacing: number[] = [];
    const packetEnds: { segmentIndex: number; granule: bigint }[] = [];
    for (const packet of packets) {
      for (let left = packet.data.length; ; left -= 255) {
        if (left >= 255) {
          lacing.push(255);
        } else {
          lacing.push(left);
          break;
        }
      }
      packetEnds.push({ segmentIndex: lacing.length - 1, granule: packet.granule });
    }
    const body = concatBytes(packets.map((packet) => packet.data));

    const pages: Uint8Array[] = [];
    let segment = 0;
    let bodyOffset = 0;
    let continued = false;
    let endCursor = 0;
    // A call with no packets still writes one empty page (useful only to carry an EOS flag).
    do {
      const count = Math.min(MAX_SEGMENTS, lacing.length - segment);
      const segments = lacing.slice(segment, segment + count);
      let granule = OGG_NO_GRANULE;
      while (endCursor < packetEnds.length && packetEnds[endCursor]!.segmentIndex < segment + count) {
        granule = packetEnds[endCursor]!.granule;
        endCursor++;
      }
      const size = segments.reduce((sum, value) => sum + value, 0);
      const last = segment + count >= lacing.length;
      let flags = continued ? OGG_FLAG_CONTINUED : 0;
      if (this.sequence === 0) flags |= OGG_FLAG_BOS;
      if (last && options.eos) flags |= OGG_FLAG_EOS;
      pages.push(this.page(flags, granule, segments, body.subarray(bodyOffset, bodyOffset + size)));
      continued = count > 0 && segments[count - 1] === 255;
      segment += count;
      bodyOffset += size;
    } while (segment < lacing.length);
    return concatBytes(pages);
  }

  private page(flags: number, granule: bigint, segments: readonly number[], body: Uint8Array): Uint8Array {
    const page = new Uint8Array(PAGE_HEADER_BYTES + segments.length + body.length);
    const view = new DataView(page.buffer);
    page.set([0x4f, 0x67, 0x67, 0x53], 0); // "OggS"
    page[4] = 0; // stream structure version
    page[5] = flags;
    view.setBigInt64(6, granule, true);
    view.setUint32(14, this.serial >>> 0, true);
    view.setUint32(18, this.sequence++, true);
    // bytes 22..25: CRC, computed below with the field still zero as the spec requires
    page[26] = segments.length;
    page.set(segments, PAGE_HEADER_BYTES);
    page.set(body, PAGE_HEADER_BYTES + segments.length);
    view.setUint32(22, oggCrc32(page), true);
    return page;
  }
}

export interface OpusHeadFields {
  channels: number;
  /** Samples at 48 kHz the decoder discards at the start: the encoder's lookahead. */
  preSkip: number;
  /** The rate of the audio before encoding; informational, players may pick it for output. */
  inputSampleRate: number;
  /** Q7.8 dB gain applied on decode; 0 for speech we already level. */
  outputGain?: number;
}

/** RFC 7845 §5.1 identification header, channel mapping family 0 (mono/stereo, no mapping table). */
export function opusHeadPacket(fields: OpusHeadFields): Uint8Array {
  const packet = new Uint8Array(19);
  const view = new DataView(packet.buffer);
  packet.set(ascii('OpusHead'), 0);
  packet[8] = 1; // version
  packet[9] = fields.channels;
  view.setUint16(10, fields.preSkip, true);
  view.setUint32(12, fields.inputSampleRate, true);
  view.setInt16(16, fields.outputGain ?? 0, true);
  packet[18] = 0; // mapping family
  return packet;
}

/** RFC 7845 §5.2 comment header: vendor string and `NAME=value` comments, all UTF-8 with 32-bit lengths. */
export function opusTagsPacket(vendor: string, comments: readonly string[] = []): Uint8Array {
  const encoder = new TextEncoder();
  const vendorBytes = encoder.encode(vendor);
  const commentBytes = comments.map((comment) => encoder.encode(comment));
  const parts: Uint8Array[] = [ascii('OpusTags'), u32le(vendorBytes.length), vendorBytes, u32le(commentBytes.length)];
  for (const bytes of commentBytes) parts.push(u32le(bytes.length), bytes);
  return concatBytes(parts);
}

function ascii(text: string): Uint8Array {
  return Uint8Array.from(text, (char) => char.charCodeAt(0));
}

function u32le(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value, true);
  return out;
}
