/**
 * The hand-written fMP4 fragment writer against the reference it replaced: for the same samples, the
 * bytes mp4box's createMoof() + mdat produce (moof patched with its data offset, as mp4box's own
 * createFragment() does). Also the 64-bit tfdt a very long stream needs, which mp4box does not write.
 */

import { BoxParser, DataStream, createFile, type Sample } from 'mp4box';
import { describe, expect, it } from 'vitest';
import { writeFragment } from '../../../../src/codecs/encoders/mp4-fragment.js';

/** Seeded pseudo-random frames of AAC-like sizes (the writer does not look inside them). */
function frames(count: number, seed: number): Uint8Array[] {
  let state = seed;
  const next = (): number => (state = (state * 1103515245 + 12345) >>> 0) / 2 ** 32;
  return Array.from({ length: count }, () => Uint8Array.from({ length: 6 + Math.floor(next() * 400) }, () => Math.floor(next() * 256)));
}

/** What mp4box writes for each batch in turn: fragments numbered from 1, samples of `duration` ticks from tick 0. */
function mp4boxFragment(batches: Uint8Array[][], duration: number): Uint8Array[] {
  const file = createFile();
  file.init({ timescale: 24000 });
  const trackId = file.addTrack({ type: 'mp4a', hdlr: 'soun', timescale: 24000, samplerate: 24000, channel_count: 1 })!;
  let tick = 0;
  return batches.map((units) => {
    const samples = units.map((data) => {
      const dts = tick;
      tick += duration;
      return { track_id: trackId, data, size: data.length, duration, dts, cts: dts, is_sync: true } as unknown as Sample;
    });
    const moof = file.createMoof(samples);
    const stream = new DataStream();
    moof.write(stream);
    const trun = moof.trafs[0]!.truns[0]!;
    trun.data_offset = moof.size + 8;
    stream.adjustUint32(trun.data_offset_position, trun.data_offset);
    const mdat = new BoxParser.box.mdat();
    mdat.data = Uint8Array.from(units.flatMap((unit) => [...unit]));
    mdat.write(stream);
    return new Uint8Array(stream.buffer, 0, stream.getPosition()).slice();
  });
}

describe('writeFragment', () => {
  it('writes the bytes mp4box writes, fragment after fragment', () => {
    const all = frames(40, 7);
    const sizes = [1, 2, 3, 1, 7, 26];
    const batches: Uint8Array[][] = [];
    for (let at = 0, i = 0; at < all.length; at += sizes[i++]!) batches.push(all.slice(at, at + sizes[i]!));
    const reference = mp4boxFragment(batches, 1024);
    let tick = 0;
    batches.forEach((units, index) => {
      const ours = writeFragment({ sequenceNumber: index + 1, trackId: 1, baseMediaDecodeTime: tick, sampleDuration: 1024, samples: units });
      expect(Buffer.from(ours).equals(Buffer.from(reference[index]!)), `fragment ${index + 1}`).toBe(true);
      tick += units.length * 1024;
    });
  });

  it('switches tfdt to version 1 (64-bit) once the decode time passes 2^32 ticks', () => {
    const time = 2 ** 32 + 5 * 1024;
    const bytes = writeFragment({ sequenceNumber: 9, trackId: 1, baseMediaDecodeTime: time, sampleDuration: 1024, samples: frames(2, 3) });
    const view = new DataView(bytes.buffer);
    // moof(8) mfhd(16) traf(8) tfhd(16) → tfdt at 48
    expect(String.fromCharCode(...bytes.subarray(52, 56))).toBe('tfdt');
    expect(view.getUint32(48)).toBe(20);
    expect(bytes[56]).toBe(1);
    expect(view.getBigUint64(60)).toBe(BigInt(time));
    // the trun's data offset still lands on the mdat payload
    const moofSize = view.getUint32(0);
    expect(String.fromCharCode(...bytes.subarray(moofSize + 4, moofSize + 8))).toBe('mdat');
    expect(view.getUint32(48 + 20 + 16)).toBe(moofSize + 8);
  });
});
