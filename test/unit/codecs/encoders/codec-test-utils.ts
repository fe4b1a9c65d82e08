/**
 * Shared helpers for the encoder tests: a deterministic speech-like test signal, whole-stream encoding with
 * a chosen chunk size, in-process decoding of every output format back to samples, and an Ogg page reader
 * (alignment and quality measures live in signal-metrics.ts).
 */

import decode from 'audio-decode';
import alawmulaw from 'alawmulaw';
import { createEncoder } from '../../../../src/codecs/encoders/index.js';
import { concatBytes } from '../../../../src/codecs/encoders/encoder-lifecycle.js';
import { oggCrc32 } from '../../../../src/codecs/encoders/ogg-muxer.js';
import { floatToInt16 } from '../../../../src/codecs/encoders/pcm.js';
import { createResampler } from '../../../../src/codecs/resample.js';
import type { SpeechFormat } from '../../../../src/codecs/types.js';

export const INPUT_RATE = 24000;

/** Deterministic PRNG (LCG) so the signal, and thus every byte-level assertion, is the same on every run. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32 - 0.5;
  };
}

const VOWELS = [
  [700, 1220, 2600],
  [300, 2300, 3000],
  [320, 800, 2300],
  [500, 1700, 2500],
] as const;

/**
 * ≈Speech: voiced stretches (a gliding 90–220 Hz pitch, harmonics shaped by three vowel formants),
 * fricative-like high-passed noise, and short pauses, with 10 ms fades. Peaks near 0.6.
 */
export function speechLikeSignal(seconds: number, rate = INPUT_RATE, seed = 7): Float32Array {
  const n = Math.round(seconds * rate);
  const out = new Float32Array(n);
  const random = prng(seed);
  const pattern = ['voiced', 'fricative', 'voiced', 'pause', 'voiced', 'voiced', 'fricative', 'pause'] as const;
  let start = 0;
  let phase = 0;
  let lowA = 0;
  let lowB = 0;
  const alphaA = 1 - Math.exp((-2 * Math.PI * 6000) / rate);
  const alphaB = 1 - Math.exp((-2 * Math.PI * 2000) / rate);
  for (let segment = 0; start < n; segment++) {
    const kind = pattern[segment % pattern.length]!;
    const length = Math.min(n - start, Math.round(rate * (kind === 'pause' ? 0.06 : 0.12 + 0.18 * (random() + 0.5))));
    const formants = VOWELS[segment % VOWELS.length]!;
    const f0Start = 100 + 120 * (random() + 0.5);
    const f0End = 90 + 100 * (random() + 0.5);
    const fade = Math.round(rate * 0.01);
    for (let i = 0; i < length; i++) {
      const envelope = Math.min(1, i / fade, (length - 1 - i) / fade);
      let value = 0;
      if (kind === 'voiced') {
        const f0 = f0Start + ((f0End - f0Start) * i) / length;
        phase += (2 * Math.PI * f0) / rate;
        for (let h = 1; h * f0 < Math.min(5000, rate / 2 - 500); h++) {
          let gain = 0;
          for (const formant of formants) gain += 1 / (1 + ((h * f0 - formant) / 90) ** 2);
          value += (0.3 * gain * Math.sin(h * phase)) / Math.sqrt(h);
        }
      } else if (kind === 'fricative') {
        // White noise through two one-pole low-passes, differenced: a band around 2–6 kHz, like /s/ or /f/.
        const noise = random();
        lowA += alphaA * (noise - lowA);
        lowB += alphaB * (noise - lowB);
        value = 0.8 * (lowA - lowB);
      }
      out[start + i] = Math.max(-0.95, Math.min(0.95, value * envelope));
    }
    start += length;
  }
  return out;
}

/** Resamples a whole signal in one go with the project's resampler (the reference for 8/16 kHz formats). */
export async function resampleWhole(input: Float32Array, from: number, to: number): Promise<Float32Array> {
  if (from === to) return input;
  const resampler = await createResampler(from, to);
  try {
    return concatFloat([resampler.process(input), resampler.flush()]);
  } finally {
    resampler.close();
  }
}

export const toS16 = floatToInt16;

/**
 * Decoders scale s16 to float differently (audio-decode's WAV reader uses /32767 for positive and /32768
 * for negative samples, its FLAC reader /32767): recover the integer exactly whichever scale was used.
 */
export function decodedToS16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const f = samples[i]!;
    const a = Math.round(f * 32767);
    const b = Math.round(f * 32768);
    if (Math.fround(a / 32767) === f) out[i] = a;
    else if (Math.fround(b / 32768) === f) out[i] = b;
    else throw new Error(`decoded sample ${f} at ${i} is not a 16-bit value`);
  }
  return out;
}

export interface EncodedStream {
  bytes: Uint8Array;
  /** Output of each push (and, last, of flush), in order. */
  outputs: Uint8Array[];
}

/** Encodes `input` pushed in chunks of `chunk` samples, then flushes and closes. */
export async function encodeAll(format: SpeechFormat, input: Float32Array, chunk: number, inputRate = INPUT_RATE): Promise<EncodedStream> {
  const encoder = await createEncoder(format, { inputRate });
  const outputs: Uint8Array[] = [];
  try {
    for (let offset = 0; offset < input.length; offset += chunk) outputs.push(await encoder.push(input.subarray(offset, offset + chunk)));
    outputs.push(await encoder.flush());
  } finally {
    encoder.close();
  }
  return { bytes: concatBytes(outputs), outputs };
}

export interface DecodedAudio {
  sampleRate: number;
  channels: number;
  samples: Float32Array;
  /** Exact 16-bit integers, for the formats that carry them. */
  s16?: Int16Array;
}

function leS16(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = ((bytes[2 * i]! | (bytes[2 * i + 1]! << 8)) << 16) >> 16;
  return out;
}

function s16ToFloat(s16: Int16Array): Float32Array {
  return Float32Array.from(s16, (v) => v / 32768);
}

/** Decodes any of the 13 outputs in-process: our own readers for headerless PCM/G.711, audio-decode otherwise. */
export async function decodeFormat(format: SpeechFormat, bytes: Uint8Array): Promise<DecodedAudio> {
  const headerless = (s16: Int16Array, sampleRate: number): DecodedAudio => ({ sampleRate, channels: 1, s16, samples: s16ToFloat(s16) });
  switch (format) {
    case 'pcm':
      return headerless(leS16(bytes), 24000);
    case 'l16_8000':
      return headerless(leS16(bytes), 8000);
    case 'l16_16000':
      return headerless(leS16(bytes), 16000);
    case 'ulaw':
    case 'ulaw_8k':
      return headerless(alawmulaw.mulaw.decode(bytes), 8000);
    case 'alaw':
      return headerless(alawmulaw.alaw.decode(bytes), 8000);
    default: {
      const audio = await decode(bytes);
      const samples = audio.channelData[0] ?? new Float32Array(0);
      const lossless = format === 'wav' || format === 'wav_8k' || format === 'flac';
      return { sampleRate: audio.sampleRate, channels: audio.channelData.length, samples, ...(lossless ? { s16: decodedToS16(samples) } : {}) };
    }
  }
}

export interface OggPage {
  flags: number;
  granule: bigint;
  serial: number;
  sequence: number;
  crc: number;
  segments: number[];
  body: Uint8Array;
  /** The whole page as it appears in the stream. */
  raw: Uint8Array;
}

/** Splits an Ogg stream into pages (throws on a missing capture pattern). */
export function readOggPages(bytes: Uint8Array): OggPage[] {
  const pages: OggPage[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let offset = 0; offset < bytes.length;) {
    if (String.fromCharCode(...bytes.subarray(offset, offset + 4)) !== 'OggS') throw new Error(`no OggS at byte ${offset}`);
    const count = bytes[offset + 26]!;
    const segments = Array.from(bytes.subarray(offset + 27, offset + 27 + count));
    const size = segments.reduce((sum, value) => sum + value, 0);
    const end = offset + 27 + count + size;
    pages.push({
      flags: bytes[offset + 5]!,
      granule: view.getBigInt64(offset + 6, true),
      serial: view.getUint32(offset + 14, true),
      sequence: view.getUint32(offset + 18, true),
      crc: view.getUint32(offset + 22, true),
      segments,
      body: bytes.subarray(offset + 27 + count, end),
      raw: bytes.subarray(offset, end),
    });
    offset = end;
  }
  return pages;
}

/** Reassembles the packets of an Ogg stream from its pages' lacing. */
export function oggPackets(pages: readonly OggPage[]): Uint8Array[] {
  const packets: Uint8Array[] = [];
  let current: Uint8Array[] = [];
  for (const page of pages) {
    let offset = 0;
    for (const lace of page.segments) {
      current.push(page.body.subarray(offset, offset + lace));
      offset += lace;
      if (lace < 255) {
        packets.push(concatBytes(current));
        current = [];
      }
    }
  }
  return packets;
}

/** The same stream with every page's serial set to 0 and its CRC recomputed (serials are random per stream). */
export function withOggSerialZero(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice();
  const view = new DataView(out.buffer);
  for (const page of readOggPages(bytes)) {
    const offset = page.raw.byteOffset - bytes.byteOffset;
    view.setUint32(offset + 14, 0, true);
    view.setUint32(offset + 22, 0, true);
    view.setUint32(offset + 22, oggCrc32(out.subarray(offset, offset + page.raw.length)), true);
  }
  return out;
}

export function concatFloat(parts: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

export { concatBytes };
