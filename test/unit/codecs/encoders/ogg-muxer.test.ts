/**
 * The Ogg muxer byte by byte: the CRC against its published check value and a bit-by-bit reference, page
 * headers, lacing at 255-byte multiples, packets spanning pages, granule positions and BOS/EOS flags —
 * then the same rules on a real Ogg Opus stream from the opus encoder (headers, pre-skip, end trimming).
 */

import { describe, expect, it } from 'vitest';
import { createOpusEncoder, opusLookahead, OPUS_VENDOR } from '../../../../src/codecs/encoders/opus.js';
import {
  OGG_FLAG_BOS,
  OGG_FLAG_CONTINUED,
  OGG_FLAG_EOS,
  OGG_NO_GRANULE,
  oggCrc32,
  OggStreamWriter,
  opusHeadPacket,
  opusTagsPacket,
} from '../../../../src/codecs/encoders/ogg-muxer.js';
import { oggPackets, readOggPages, speechLikeSignal } from './codec-test-utils.js';

/** Bit-at-a-time CRC from the definition (poly 0x04c11db7, MSB first, init 0, no reflection, no final XOR). */
function referenceCrc(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 24;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x80000000 ? (crc << 1) ^ 0x04c11db7 : crc << 1;
  }
  return crc >>> 0;
}

const packet = (length: number, fill = 7): Uint8Array => new Uint8Array(length).fill(fill);

describe('oggCrc32', () => {
  it('matches the check value of CRC-32/POSIX without its final XOR ("123456789" → 0x89a1897f)', () => {
    expect(oggCrc32(new TextEncoder().encode('123456789'))).toBe(0x89a1897f); // CRC-32/POSIX check 0x765e7680, un-XORed;
  });

  it('matches the bitwise definition on arbitrary bytes', () => {
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 37 + 11) & 0xff);
    expect(oggCrc32(bytes)).toBe(referenceCrc(bytes));
    expect(oggCrc32(new Uint8Array(0))).toBe(0);
  });
});

describe('OggStreamWriter pages', () => {
  it('writes the page header fields and a CRC computed with the CRC field zeroed', () => {
    const writer = new OggStreamWriter(0xdeadbeef);
    const bytes = writer.writePackets([{ data: packet(10), granule: 1234n }]);
    const [page] = readOggPages(bytes);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('OggS');
    expect(bytes[4]).toBe(0); // version
    expect(page!.serial).toBe(0xdeadbeef);
    expect(page!.sequence).toBe(0);
    expect(page!.granule).toBe(1234n);
    expect(page!.segments).toEqual([10]);
    expect(bytes.length).toBe(27 + 1 + 10);
    const zeroed = bytes.slice();
    zeroed.fill(0, 22, 26);
    expect(page!.crc).toBe(referenceCrc(zeroed));
  });

  it('laces packets of 255-byte multiples with a terminating 0 segment', () => {
    const writer = new OggStreamWriter(1);
    const lengths = [0, 1, 254, 255, 256, 510];
    const bytes = writer.writePackets(lengths.map((length, i) => ({ data: packet(length, i), granule: BigInt(i) })));
    const [page] = readOggPages(bytes);
    expect(page!.segments).toEqual([0, 1, 254, 255, 0, 255, 1, 255, 255, 0]);
    expect(oggPackets([page!]).map((p) => p.length)).toEqual(lengths);
    expect(page!.granule).toBe(5n); // the granule of the last packet completed on the page
  });

  it('continues a packet over pages past 255 segments, with granule -1 where no packet ends', () => {
    const writer = new OggStreamWriter(1);
    const big = Uint8Array.from({ length: 255 * 255 + 300 }, (_, i) => i & 0xff);
    const pages = readOggPages(writer.writePackets([{ data: big, granule: 99n }], { eos: true }));
    expect(pages).toHaveLength(2);
    expect(pages[0]!.segments).toHaveLength(255);
    expect(pages[0]!.granule).toBe(OGG_NO_GRANULE);
    expect(pages[0]!.flags).toBe(OGG_FLAG_BOS);
    expect(pages[1]!.flags).toBe(OGG_FLAG_CONTINUED | OGG_FLAG_EOS);
    expect(pages[1]!.segments).toEqual([255, 45]);
    expect(pages[1]!.granule).toBe(99n);
    expect(pages.map((page) => page.sequence)).toEqual([0, 1]);
    expect(Buffer.from(oggPackets(pages)[0]!).equals(Buffer.from(big))).toBe(true);
  });

  it('marks BOS on the first page only and EOS only where asked', () => {
    const writer = new OggStreamWriter(5);
    const bytes = [
      writer.writePackets([{ data: packet(3), granule: 0n }]),
      writer.writePackets([{ data: packet(3), granule: 10n }]),
      writer.writePackets([{ data: packet(3), granule: 20n }], { eos: true }),
    ];
    const pages = readOggPages(Buffer.concat(bytes));
    expect(pages.map((page) => page.flags)).toEqual([OGG_FLAG_BOS, 0, OGG_FLAG_EOS]);
    expect(pages.map((page) => page.sequence)).toEqual([0, 1, 2]);
    expect(writer.pageCount).toBe(3);
  });
});

describe('Opus header packets', () => {
  it('OpusHead carries version 1, channels, pre-skip, input rate, gain 0, mapping family 0', () => {
    const head = opusHeadPacket({ channels: 1, preSkip: 312, inputSampleRate: 24000 });
    const view = new DataView(head.buffer);
    expect(new TextDecoder().decode(head.subarray(0, 8))).toBe('OpusHead');
    expect([head[8], head[9], view.getUint16(10, true), view.getUint32(12, true), view.getInt16(16, true), head[18]]).toEqual([1, 1, 312, 24000, 0, 0]);
    expect(head.length).toBe(19);
  });

  it('OpusTags carries the vendor string and comments with 32-bit lengths', () => {
    const tags = opusTagsPacket('vendor', ['A=b']);
    expect(Buffer.from(tags).toString('latin1')).toBe('OpusTags\x06\x00\x00\x00vendor\x01\x00\x00\x00\x03\x00\x00\x00A=b');
  });
});

describe('the Ogg Opus stream from the opus encoder', () => {
  it('has header pages, one page per 20 ms frame with 48 kHz granules, and an EOS page trimming the padding', async () => {
    const input = speechLikeSignal(0.25); // 6000 samples: 12.5 frames
    const encoder = await createOpusEncoder({ inputRate: 24000 });
    const bytes = Buffer.concat([await encoder.push(input), await encoder.flush()]);
    const pages = readOggPages(bytes);
    const preSkip = opusLookahead(24000) * 2;
    expect(preSkip).toBe(312);

    for (const page of pages) {
      const zeroed = page.raw.slice();
      zeroed.fill(0, 22, 26);
      expect(page.crc).toBe(referenceCrc(zeroed));
      expect(page.serial).toBe(pages[0]!.serial);
    }
    expect(pages.map((page) => page.sequence)).toEqual(pages.map((_, i) => i));

    const [head, tags, ...audio] = pages;
    expect(head!.flags).toBe(OGG_FLAG_BOS);
    expect(head!.granule).toBe(0n);
    expect(new DataView(head!.body.buffer, head!.body.byteOffset).getUint16(10, true)).toBe(preSkip);
    expect(tags!.granule).toBe(0n);
    expect(Buffer.from(tags!.body).includes(OPUS_VENDOR)).toBe(true);

    // 12 full frames while pushing, then frames until input + lookahead (6156 samples) is covered: 13 in all.
    const frames = Math.ceil((input.length + opusLookahead(24000)) / 480);
    expect(oggPackets(audio)).toHaveLength(frames);
    const middle = audio.slice(0, -1);
    expect(middle.map((page) => page.granule)).toEqual(middle.map((_, i) => BigInt((i + 1) * 960)));
    expect(middle.every((page) => page.flags === 0)).toBe(true);
    const last = audio[audio.length - 1]!;
    expect(last.flags).toBe(OGG_FLAG_EOS);
    expect(last.granule).toBe(BigInt(preSkip + input.length * 2));
  });

  it('an empty stream still ends with an EOS page whose granule is exactly the pre-skip', async () => {
    const encoder = await createOpusEncoder({ inputRate: 24000 });
    const pages = readOggPages(await encoder.flush());
    expect(pages).toHaveLength(3);
    expect(pages[2]!.flags).toBe(OGG_FLAG_EOS);
    expect(pages[2]!.granule).toBe(312n);
  });
});
