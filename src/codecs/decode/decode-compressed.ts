/**
 * Decodes the compressed containers (MP3, Ogg/Opus, Ogg/Vorbis, FLAC, WebM/Matroska, MP4/M4A, ADTS AAC)
 * with audio-decode's per-format streaming decoders, downmixing each decoded block to mono as it comes.
 *
 * Why streaming rather than audio-decode's one-call `decode(buffer)`: (1) the duration limit can stop the
 * decoder as soon as the decoded audio passes it, instead of after decoding a whole huge file; (2) the
 * WebM decoder is pathologically slow on one big buffer (measured: 60 s of WebM/Opus took 14.8 s in one
 * call, 0.4 s fed in 64 KiB chunks); (3) an mp3 whose channels are identical at first and differ later
 * comes out of audio-decode first as 1 channel, then 2 — per-block downmixing absorbs that. The
 * exception is an MP4 with its index at the end, which goes in whole (see indexAtEnd).
 */
import decode from 'audio-decode';
import type { StreamDecoder } from 'audio-decode';
import { AudioDecodeError } from '../types.js';
import type { ContainerKind, DetectedContainer } from './detect-container.js';
import { boxes, looksTruncated } from './container-probe.js';
import { mp4TableProblem } from './mp4-guard.js';

/** Bytes handed to the decoder per call. */
const CHUNK_BYTES = 64 * 1024;

const DECODERS: Record<Exclude<ContainerKind, 'wav'>, () => Promise<StreamDecoder>> = {
  'mp3': () => decode.mp3(),
  'ogg-opus': () => decode.opus(),
  'ogg-vorbis': () => decode.oga(),
  'ogg-flac': () => decode.flac(), // audio-decode's FLAC decoder reads native FLAC and FLAC-in-Ogg
  'flac': () => decode.flac(),
  'webm': () => decode.webm(), // handles Matroska too (audio-decode registers 'mkv' to the same package)
  'mp4': () => decode.m4a(),
  'adts': () => decode.aac(),
};

export interface DurationLimit {
  maxSeconds: number;
  /** Allowance over maxSeconds for codec padding before the limit counts as passed. */
  slackSeconds: number;
}

export interface CompressedResult {
  /** Mono: the mean of the source channels. */
  samples: Float32Array;
  sampleRate: number;
  /** Most channels seen in one decoded block (audio-decode reports dual-mono mp3/aac as 1). */
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

/** Collects mono blocks and enforces the duration limit as they arrive. */
class MonoCollector {
  private readonly parts: Float32Array[] = [];
  frames = 0;
  sampleRate = 0;
  channels = 0;

  constructor(private readonly label: string, private readonly limit: DurationLimit | undefined) {}

  add(block: { channelData: Float32Array[]; sampleRate: number }): void {
    const chans = block.channelData;
    const n = chans[0]?.length ?? 0;
    if (!n) return;
    if (!this.sampleRate) this.sampleRate = block.sampleRate;
    if (block.sampleRate !== this.sampleRate || !(this.sampleRate > 0)) {
      throw new AudioDecodeError('unsupported', `The file looks like ${this.label} but its sample rate changes mid-stream (${this.sampleRate} → ${block.sampleRate} Hz).`);
    }
    this.channels = Math.max(this.channels, chans.length);
    const mono = new Float32Array(n);
    for (const ch of chans) for (let i = 0; i < n; i++) mono[i]! += ch[i] ?? 0;
    const scale = 1 / chans.length;
    for (let i = 0; i < n; i++) {
      const v = mono[i]! * scale;
      // A decoder handing out NaN/Infinity has gone wrong on this input; the models must never see it.
      if (!Number.isFinite(v)) throw new AudioDecodeError('corrupt', `The file looks like ${this.label} but decoding it produced invalid (non-finite) samples.`);
      mono[i] = v;
    }
    this.parts.push(mono);
    this.frames += n;
    const seconds = this.frames / this.sampleRate;
    if (this.limit && seconds > this.limit.maxSeconds + this.limit.slackSeconds) {
      throw new AudioDecodeError('too_long', `The audio is longer than the ${this.limit.maxSeconds} s limit (decoding stopped at ${seconds.toFixed(1)} s).`);
    }
  }

  result(): Float32Array {
    const out = new Float32Array(this.frames);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

/**
 * True when an MP4's `moov` (its index) comes after the first chunk. The MP4 demuxer re-joins all bytes
 * received so far on every call until it has the whole moov, which made chunked feeding quadratic
 * (measured: 13 s for a 15-minute m4a with its index at the end); such files go in whole.
 */
function indexAtEnd(bytes: Uint8Array): boolean {
  const moov = boxes(bytes, 0, bytes.length).find((b) => b.type === 'moov');
  return !moov || moov.end > CHUNK_BYTES;
}

/**
 * Decodes `bytes` (already identified as `container`) to mono at the source rate. Every failure is an
 * AudioDecodeError naming the detected format; a partial stream that decodes to some audio is returned.
 */
export async function decodeCompressed(bytes: Uint8Array, container: DetectedContainer, limit?: DurationLimit): Promise<CompressedResult> {
  if (container.kind === 'wav') throw new TypeError('decodeCompressed does not handle WAV');
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
  const collector = new MonoCollector(label, limit);
  const chunkBytes = container.kind === 'mp4' && indexAtEnd(bytes) ? bytes.length : CHUNK_BYTES;
  let finished = false;
  try {
    for (let at = container.offset; at < bytes.length; at += chunkBytes) {
      collector.add(await decoder(bytes.subarray(at, at + chunkBytes)));
    }
    finished = true; // decoder() with no chunk flushes and frees
    collector.add(await decoder());
  } catch (error) {
    if (!finished) decoder.free();
    if (error instanceof AudioDecodeError) throw error;
    const kind = looksTruncated(bytes, container) ? 'truncated' : 'corrupt';
    const what = kind === 'truncated' ? 'it ends early (truncated)' : 'it could not be decoded';
    throw new AudioDecodeError(kind, `The file looks like ${label} but ${what}: ${describe(error)}`);
  }
  if (collector.frames === 0) {
    const truncated = looksTruncated(bytes, container);
    throw new AudioDecodeError(
      truncated ? 'truncated' : 'corrupt',
      `The file looks like ${label} but ${truncated ? 'it ends before any complete audio frame (truncated)' : 'no audio could be decoded from it'}.`,
    );
  }
  return { samples: collector.result(), sampleRate: collector.sampleRate, channels: collector.channels };
}
