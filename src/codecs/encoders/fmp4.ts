/**
 * The `fmp4` speech format: AAC-LC (mono, 24 kHz) in fragmented MP4, media type audio/mp4 — what
 * MediaSource and progressive players take. The bytes are an initialisation segment (ftyp + moov with
 * mvex, no samples) followed by one fragment (moof + mdat) per push that produced AAC frames.
 *
 * The AAC frames come from the shared ffmpeg engine in aac.ts (ADTS, headers stripped here). The boxes are
 * built with `mp4box`: its ISOFile writes the ftyp/moov (with an esds carrying the AudioSpecificConfig);
 * the fragments, written per push, come from mp4-fragment.ts (same layout as mp4box's createMoof(), a
 * fraction of its cost). The init segment depends on nothing but the fixed codec configuration, so it
 * goes out with the first push, before any audio.
 *
 * Timing: timescale 24000 (one tick per sample), every sample 1024 ticks, baseMediaDecodeTime = 1024 ×
 * frames already written. As with ADTS, the first 1024 samples are encoder priming; no edit list is
 * written because players disagree on edit lists in fragmented files and a 43 ms lead-in is harmless.
 */

import { BoxParser, ISOFile, createFile, type Box } from 'mp4box';
import { formatInfo } from '../formats.js';
import type { EncoderOptions, StreamingEncoder } from '../types.js';
import { type AacEncoderDeps, createAdtsEncoder } from './aac.js';
import { audioSpecificConfig, stripAdtsHeader } from './adts.js';
import { concatBytes } from './encoder-lifecycle.js';
import { writeFragment } from './mp4-fragment.js';

const SAMPLE_RATE = 24000;
const FRAME_TICKS = 1024;
/**
 * esds maxBitrate: the AAC-LC ceiling for one channel (6144 bits per 1024-sample frame), as the stream is
 * VBR and no tighter bound is known while it is being written.
 */
const MAX_BITRATE_BPS = (6144 * SAMPLE_RATE) / FRAME_TICKS;

export async function createFmp4Encoder(options: EncoderOptions, deps: AacEncoderDeps = {}): Promise<StreamingEncoder> {
  const muxer = new Fmp4Muxer();
  return createAdtsEncoder(formatInfo('fmp4'), options, (frames) => muxer.mux(frames), deps);
}

/** Streams ADTS frames as an fMP4: init segment first, then one fragment per non-empty batch. */
export class Fmp4Muxer {
  private readonly file: ISOFile;
  private readonly trackId: number;
  private initSent = false;
  private framesWritten = 0;
  private fragmentsWritten = 0;

  constructor() {
    this.file = createFile();
    // The brands ffmpeg writes for the same layout: iso5 covers tfhd's default-base-is-moof flag, which
    // createMoof() sets; mp41 for players that look for an MP4 brand at all.
    this.file.init({ brands: ['iso5', 'iso6', 'mp41'], timescale: SAMPLE_RATE });
    const trackId = this.file.addTrack({
      type: 'mp4a',
      hdlr: 'soun',
      name: 'Kuma speech',
      timescale: SAMPLE_RATE,
      samplerate: SAMPLE_RATE,
      channel_count: 1,
      samplesize: 16,
      language: 'und',
      description: esdsBox(audioSpecificConfig(SAMPLE_RATE, 1)),
    });
    if (trackId === undefined) throw new Error('mp4box could not create the AAC track');
    this.trackId = trackId;
    const trak = this.file.getTrackById(trackId);
    // addTrack() fills in video defaults (320×320) that have no meaning for a sound track.
    trak.tkhd.width = 0;
    trak.tkhd.height = 0;
    // mp4box writes mdhd.language with writeUint16(), so the 'und' string it stores comes out as 0, which
    // readers take for the old Macintosh code 0 = English. Store the packed ISO 639-2 code instead.
    (trak.mdia.mdhd as unknown as { language: number }).language = packLanguage('und');
  }

  /** The init segment: ftyp, then moov (mvhd, trak, mvex) — mvhd first, as players expect. */
  initSegment(): Uint8Array {
    const moov = new BoxParser.box.moov();
    const source = this.file.moov!;
    moov.addBox(source.mvhd);
    moov.addBox(this.file.getTrackById(this.trackId));
    // writeInitializationSegment() appends the mvex (a trex per trak) that marks the file as fragmented.
    const buffer = ISOFile.writeInitializationSegment(this.file.ftyp!, moov, 0);
    return new Uint8Array(buffer);
  }

  /** Bytes for one push: the init segment on the first call, then a fragment if there are frames. */
  mux(adtsFrames: readonly Uint8Array[]): Uint8Array {
    const parts: Uint8Array[] = [];
    if (!this.initSent) {
      parts.push(this.initSegment());
      this.initSent = true;
    }
    if (adtsFrames.length > 0) parts.push(this.fragment(adtsFrames.map(stripAdtsHeader)));
    return concatBytes(parts);
  }

  private fragment(units: readonly Uint8Array[]): Uint8Array {
    const bytes = writeFragment({
      sequenceNumber: ++this.fragmentsWritten,
      trackId: this.trackId,
      baseMediaDecodeTime: this.framesWritten * FRAME_TICKS,
      sampleDuration: FRAME_TICKS,
      samples: units,
    });
    this.framesWritten += units.length;
    return bytes;
  }
}

/** ISO 639-2/T code packed as three 5-bit letters (ISO/IEC 14496-12 §8.4.2.3). */
function packLanguage(code: string): number {
  return [...code].reduce((packed, letter) => (packed << 5) | (letter.charCodeAt(0) - 0x60), 0);
}

/**
 * An esds box (ISO/IEC 14496-14 §5.6) holding the ES_Descriptor: ES_ID 0, a DecoderConfigDescriptor for
 * MPEG-4 Audio (objectTypeIndication 0x40, streamType audio) with the AudioSpecificConfig as its
 * DecoderSpecificInfo, and the SLConfigDescriptor MP4 requires (predefined = 2). mp4box parses esds but
 * has no writer for its descriptors, so the payload is serialised here and written as the box's data.
 */
function esdsBox(asc: Uint8Array): Box {
  const descriptor = (tag: number, body: Uint8Array): Uint8Array => {
    if (body.length > 127) throw new Error('descriptor too long for a one-byte size');
    return Uint8Array.of(tag, body.length, ...body);
  };
  const u32 = (value: number): number[] => [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
  const decoderSpecificInfo = descriptor(0x05, asc);
  const decoderConfig = descriptor(
    0x04,
    Uint8Array.of(
      0x40, // objectTypeIndication: MPEG-4 Audio (ISO/IEC 14496-3)
      (0x05 << 2) | 0x01, // streamType 5 = audio, upStream 0, reserved 1
      0x00,
      0x06,
      0x00, // bufferSizeDB: 1536 bytes, above the largest AAC-LC mono frame (6144 bits)
      ...u32(MAX_BITRATE_BPS), // maxBitrate
      ...u32(0), // avgBitrate: 0 = variable bitrate (ISO/IEC 14496-1 §7.2.6.6.2)
      ...decoderSpecificInfo,
    ),
  );
  const slConfig = descriptor(0x06, Uint8Array.of(0x02));
  const esDescriptor = descriptor(0x03, Uint8Array.of(0x00, 0x00, 0x00, ...decoderConfig, ...slConfig));
  const box = new BoxParser.box.esds();
  // FullBox.write() emits version 0 / flags 0, then `data`.
  box.data = esDescriptor;
  return box;
}
