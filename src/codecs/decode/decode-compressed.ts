/**
 * Decodes the compressed containers (MP3, Ogg/Opus, Ogg/Vorbis, FLAC, WebM/Matroska, MP4/M4A, ADTS AAC)
 * with per-format streaming decoders, yielding mono blocks at the source rate as they come, so the caller
 * never holds more than one block: a 1 MB FLAC of two hours of silence expands to 1.3 GB of samples at
 * 44.1 kHz, and must never be expanded at once.
 *
 * How much PCM one decoder call produces is bytes fed × the file's expansion ratio, which ranges from
 * ≈ 3 values per byte (speech at 128 kbit/s) to ≈ 300 (FLAC of silence) and more for hostile files. So the
 * bytes go in adaptively: each call's size aims at TARGET_VALUES decoded values at the last call's ratio,
 * within [MIN_CHUNK_BYTES, MAX_CHUNK_BYTES], starting at the minimum and at most doubling per call; a
 * call's output passes the aim only where the ratio jumps up within one chunk (or a container releases a
 * whole page or cluster at once), and is bounded by what MAX_CHUNK_BYTES plus the decoder's own buffer
 * expand to.
 *
 * Other reasons for streaming: the duration limit stops decoding as soon as it is passed; the WebM
 * decoder is pathologically slow on one big buffer (60 s of WebM/Opus: 14.8 s in one call, 0.4 s in
 * 64 KiB chunks); an mp3 whose channels are identical at first and differ later comes out first as 1
 * channel, then 2 — per-block downmixing absorbs that. Every decoder here gives the same samples whatever
 * the chunk sizes (checked in test/unit/codecs/decode-stream.test.ts); audio-decode's native-FLAC parser
 * does not (it drops a frame whose header straddles two chunks), so native FLAC uses the upstream
 * @wasm-audio-decoders/flac decoder, whose codec-parser reassembles frames across chunks.
 */
import decode from 'audio-decode';
import type { AudioData, StreamDecoder } from 'audio-decode';
import { FLACDecoder } from '@wasm-audio-decoders/flac';
import { AudioDecodeError } from '../types.js';
import type { ContainerKind, DetectedContainer } from './detect-container.js';
import { boxes, looksTruncated } from './container-probe.js';
import { mp4TableProblem } from './mp4-guard.js';
import { moovFirst } from './mp4-faststart.js';

/** Decoded values (frames × channels) one decoder call aims at: 1 MiB of Float32. */
const TARGET_VALUES = 1 << 18;
const MIN_CHUNK_BYTES = 256;
const MAX_CHUNK_BYTES = 64 * 1024;

/**
 * codec-parser confirms a FLAC frame by finding the next frame's header, which it reads 13 bytes of; the
 * last frame of a file ending in digital silence can be shorter than that (≈ 12 bytes), and at the flush
 * it was then joined to the frame before it, one frame lost. Zero bytes after the end give the check its
 * 13 bytes, and do not disturb the last frame's CRC (a CRC-16 that is 0 stays 0 over zero bytes).
 */
const FLAC_END_PADDING = new Uint8Array(16);

/** Native FLAC through the upstream decoder, wrapped in audio-decode's StreamDecoder shape. */
async function nativeFlac(): Promise<StreamDecoder> {
  const flac = new FLACDecoder();
  await flac.ready;
  let done = false;
  const norm = (r: { channelData: Float32Array[]; samplesDecoded: number; sampleRate: number }): AudioData => ({
    channelData: r.samplesDecoded ? r.channelData.map((c) => c.subarray(0, r.samplesDecoded)) : [],
    sampleRate: r.sampleRate,
  });
  const free = () => {
    if (done) return;
    done = true;
    flac.free();
  };
  const fn = async (chunk?: Uint8Array): Promise<AudioData> => {
    if (chunk) return norm(await flac.decode(chunk));
    if (done) return { channelData: [], sampleRate: 0 };
    try {
      const beforeLast = norm(await flac.decode(FLAC_END_PADDING));
      const last = norm(await flac.flush());
      if (!beforeLast.channelData.length) return last;
      if (!last.channelData.length) return beforeLast;
      const joined = beforeLast.channelData.map((c, i) => {
        const tail = last.channelData[i] ?? last.channelData[0]!;
        const both = new Float32Array(c.length + tail.length);
        both.set(c);
        both.set(tail, c.length);
        return both;
      });
      return { channelData: joined, sampleRate: beforeLast.sampleRate };
    } finally {
      free();
    }
  };
  return Object.assign(fn, { flush: async () => norm(await flac.flush()), free });
}

const DECODERS: Record<Exclude<ContainerKind, 'wav'>, () => Promise<StreamDecoder>> = {
  mp3: () => decode.mp3(),
  'ogg-opus': () => decode.opus(),
  'ogg-vorbis': () => decode.oga(),
  'ogg-flac': () => decode.flac(), // audio-decode's FLAC decoder reads FLAC-in-Ogg through codec-parser
  flac: nativeFlac,
  webm: () => decode.webm(), // handles Matroska too (audio-decode registers 'mkv' to the same package)
  mp4: () => decode.m4a(),
  adts: () => decode.aac(),
};

/** One decoded block, downmixed. */
export interface MonoBlock {
  /** Mono: the mean of the source channels. */
  samples: Float32Array;
  sampleRate: number;
  /** Channels of this block (audio-decode reports dual-mono mp3/aac as 1). */
  channels: number;
}

/** The decoder itself could not start (its WASM failed to load): a server fault, not the upload's. */
export class DecoderUnavailableError extends Error {
  override readonly name = 'DecoderUnavailableError';
}

export function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim().slice(0, 300) || 'unknown decoder error';
}

/** The mean of a block's channels; a decoder handing out NaN/Infinity has gone wrong on this input. */
function downmix(block: AudioData, label: string): Float32Array {
  const chans = block.channelData;
  const n = chans[0]?.length ?? 0;
  const mono = new Float32Array(n);
  for (const ch of chans) for (let i = 0; i < n; i++) mono[i]! += ch[i] ?? 0;
  const scale = 1 / chans.length;
  for (let i = 0; i < n; i++) {
    const v = mono[i]! * scale;
    if (!Number.isFinite(v)) throw new AudioDecodeError('corrupt', `The file looks like ${label} but decoding it produced invalid (non-finite) samples.`);
    mono[i] = v;
  }
  return mono;
}

/** A piece of the (possibly re-ordered) file, fed in one call (`whole`) or in adaptive chunks. */
interface Piece {
  bytes: Uint8Array;
  whole: boolean;
}

/**
 * What to feed, in order. An MP4 goes in with its moov first (re-ordered when it came last), the part up
 * to the end of the moov in one call: the demuxer re-joins everything received until the moov is complete,
 * which chunked feeding would make quadratic. An MP4 that cannot be re-ordered goes in whole, as before.
 */
function piecesOf(bytes: Uint8Array, container: DetectedContainer): Piece[] {
  if (container.kind !== 'mp4') return [{ bytes: bytes.subarray(container.offset), whole: false }];
  const reordered = moovFirst(bytes);
  if (reordered) return reordered.map((p, i) => ({ bytes: p, whole: i === 0 }));
  const top = boxes(bytes, 0, bytes.length);
  const moov = top.find((b) => b.type === 'moov');
  const mdat = top.find((b) => b.type === 'mdat');
  if (!moov || moov.end > bytes.length || (mdat && mdat.at < moov.at)) return [{ bytes, whole: true }];
  return [
    { bytes: bytes.subarray(0, moov.end), whole: true },
    { bytes: bytes.subarray(moov.end), whole: false },
  ];
}

/**
 * Decodes `bytes` (already identified as `container`) to mono blocks at the source rate. Every failure
 * is an AudioDecodeError naming the detected format; a stream that stops decoding part-way but produced
 * audio ends there. The caller enforces the duration limit (it stops iterating, which frees the decoder).
 */
export async function* decodeCompressedBlocks(bytes: Uint8Array, container: DetectedContainer): AsyncGenerator<MonoBlock> {
  if (container.kind === 'wav') throw new TypeError('decodeCompressedBlocks does not handle WAV');
  const label = container.label;
  if (container.kind === 'mp4') {
    // Counts the MP4 demuxer would trust blindly (see mp4-guard.ts): a lie there crashes the process.
    const problem = mp4TableProblem(bytes);
    if (problem) throw new AudioDecodeError('corrupt', `The file looks like ${label} but ${problem}.`);
  }
  let decoder: StreamDecoder;
  try {
    decoder = await DECODERS[container.kind]();
  } catch (error) {
    throw new DecoderUnavailableError(`The ${label} decoder could not be initialised: ${describe(error)}`, { cause: error });
  }
  let sampleRate = 0;
  let frames = 0;
  const mono = (block: AudioData): MonoBlock | undefined => {
    const n = block.channelData[0]?.length ?? 0;
    if (!n) return undefined;
    if (!sampleRate) sampleRate = block.sampleRate;
    if (block.sampleRate !== sampleRate || !(sampleRate > 0)) {
      throw new AudioDecodeError(
        'unsupported',
        `The file looks like ${label} but its sample rate changes mid-stream (${sampleRate} → ${block.sampleRate} Hz).`,
      );
    }
    frames += n;
    return { samples: downmix(block, label), sampleRate, channels: block.channelData.length };
  };
  const failure = (error: unknown): AudioDecodeError => {
    if (error instanceof AudioDecodeError) return error;
    const kind = looksTruncated(bytes, container) ? 'truncated' : 'corrupt';
    const what = kind === 'truncated' ? 'it ends early (truncated)' : 'it could not be decoded';
    return new AudioDecodeError(kind, `The file looks like ${label} but ${what}: ${describe(error)}`);
  };

  try {
    let chunk = MIN_CHUNK_BYTES; // grows twofold per call up to the aim: a few calls for ordinary files
    for (const piece of piecesOf(bytes, container)) {
      for (let at = 0; at < piece.bytes.length;) {
        const slice = piece.bytes.subarray(at, piece.whole ? undefined : at + chunk);
        at += slice.length;
        let out: AudioData;
        try {
          out = await decoder(slice);
        } catch (error) {
          throw failure(error);
        }
        const block = mono(out);
        // Next call's size: TARGET_VALUES at this call's expansion ratio, growing at most twofold. A call
        // that gave nothing (headers, padding, a page not complete yet) says nothing about the ratio: the
        // size stays, lest a file open with 8 KB of metadata and then expand its next 16 KB 500-fold.
        const values = (block?.samples.length ?? 0) * Math.max(1, out.channelData.length);
        if (!piece.whole && values > 0) {
          chunk = Math.max(MIN_CHUNK_BYTES, Math.min(MAX_CHUNK_BYTES, Math.floor((slice.length * TARGET_VALUES) / values), chunk * 2));
        }
        if (block) yield block;
      }
    }
    let last: AudioData;
    try {
      last = await decoder(); // no chunk: flushes and frees
    } catch (error) {
      throw failure(error);
    }
    const block = mono(last);
    if (block) yield block;
  } finally {
    decoder.free(); // a no-op once the flush freed it
  }
  if (frames === 0) {
    const truncated = looksTruncated(bytes, container);
    throw new AudioDecodeError(
      truncated ? 'truncated' : 'corrupt',
      `The file looks like ${label} but ${truncated ? 'it ends before any complete audio frame (truncated)' : 'no audio could be decoded from it'}.`,
    );
  }
}
