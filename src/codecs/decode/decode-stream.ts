/**
 * Upload decoding as a stream: bytes of any supported container → a header (what the file is, the
 * duration it declares) → mono Float32 windows at the rate a model wants, each `windowSamples` long but
 * the last. Memory is O(window) whatever the duration: the source is decoded block by block
 * (decode-compressed.ts, or WAV frames in blocks), each block downmixed, resampled by a streaming
 * resampler and cut into windows; nothing holds the whole decoded audio.
 *
 * The windows concatenated are exactly what decoding the whole file at once gives (the resampler and the
 * decoders do not depend on how their input is chunked), so consumers that need the whole audio can join
 * them (decode-audio.ts). Every failure is an AudioDecodeError, raised where it is found: up front for
 * what the header shows (unsupported format, a declared duration over the limit), else mid-stream (a
 * corrupt frame, the decoded audio passing the limit) after the windows decoded so far.
 *
 * Runs on whichever thread iterates it and blocks that thread while WASM decodes: servers run it in the
 * DecoderPool's worker threads, one generator step at a time.
 */
import { createResampler, type StreamingResampler } from '../resample.js';
import { AudioDecodeError } from '../types.js';
import { probeDurationSeconds } from './container-probe.js';
import { decodeCompressedBlocks, DecoderUnavailableError, describe, type MonoBlock } from './decode-compressed.js';
import { detectContainer, type ContainerKind } from './detect-container.js';
import { decodeWavToMono, parseWavHeader } from './wav.js';

export interface DecodeOptions {
  /** Rate of the returned samples, in Hz. */
  targetRate: number;
  /** Longer audio is refused with AudioDecodeError('too_long'). */
  maxDurationSeconds?: number;
  /** Samples per window at targetRate (the last window may be shorter); default 10 s worth. */
  windowSamples?: number;
}

export const DEFAULT_WINDOW_SECONDS = 10;

export interface StreamHeader {
  container: ContainerKind;
  /** Human name for messages: "WAV", "MP3", "Ogg/Opus"… */
  label: string;
  /** The duration the container declares (exact for WAV), when it declares one. */
  declaredSeconds?: number;
}

export interface DecodeSummary {
  sampleRate: number;
  /** Output samples / sampleRate: what billing counts. */
  durationSeconds: number;
  container: ContainerKind;
  sourceSampleRate: number;
  /** Most channels seen in one decoded block. */
  sourceChannels: number;
}

export type DecodeEvent = { type: 'header'; header: StreamHeader } | { type: 'window'; samples: Float32Array };

/**
 * Codecs pad: priming samples, a last frame filled out, MP4 edit lists rounding up. An upload of exactly
 * the limit must not be refused for its codec's few milliseconds, so the limit is enforced with this slack.
 */
const DURATION_SLACK_SECONDS = 0.1;
/** WAV sample frames converted per step. */
const WAV_BLOCK_FRAMES = 1 << 16;

const overLimit = (seconds: number, max: number | undefined): boolean => max !== undefined && seconds > max + DURATION_SLACK_SECONDS;

function tooLong(seconds: number, max: number | undefined, stopped = false): AudioDecodeError {
  const what = stopped
    ? `The audio is longer than the ${max ?? '?'} s limit (decoding stopped at ${seconds.toFixed(1)} s).`
    : `The audio lasts ${seconds.toFixed(1)} s, more than the ${max ?? '?'} s limit.`;
  return new AudioDecodeError('too_long', what);
}

/** Resamples mono blocks to the target rate and cuts the result into windows; enforces the duration limit. */
class Windower {
  private resampler: StreamingResampler | undefined;
  private window: Float32Array;
  private fill = 0;
  sourceRate = 0;
  sourceFrames = 0;
  channels = 0;
  produced = 0;

  constructor(
    private readonly targetRate: number,
    private readonly windowSamples: number,
    private readonly label: string,
    private readonly max: number | undefined,
  ) {
    this.window = new Float32Array(windowSamples);
  }

  async push(block: MonoBlock): Promise<Float32Array[]> {
    if (!this.resampler) {
      this.sourceRate = block.sampleRate;
      try {
        this.resampler = await createResampler(block.sampleRate, this.targetRate);
      } catch (error) {
        // A damaged header can make a decoder report a rate the resampler refuses (fractional, absurd).
        throw new AudioDecodeError('unsupported', `The file's sample rate ${block.sampleRate} Hz cannot be converted: ${describe(error)}`);
      }
    }
    this.channels = Math.max(this.channels, block.channels);
    this.sourceFrames += block.samples.length;
    const seconds = this.sourceFrames / this.sourceRate;
    if (overLimit(seconds, this.max)) throw tooLong(seconds, this.max, true);
    return this.add(this.resampler.process(block.samples));
  }

  /** The rest: the resampler's tail and the last, shorter window. */
  finish(): Float32Array[] {
    const windows = this.resampler ? this.add(this.resampler.flush()) : [];
    if (this.fill > 0) windows.push(this.window.slice(0, this.fill));
    this.fill = 0;
    if (this.produced === 0) throw new AudioDecodeError('corrupt', `The file looks like ${this.label} but contains no audio.`);
    return windows;
  }

  close(): void {
    this.resampler?.close();
  }

  private add(samples: Float32Array): Float32Array[] {
    // Finite input can still overflow the filter when float samples sit near float32's limit.
    for (let i = 0; i < samples.length; i++) {
      if (!Number.isFinite(samples[i]!)) throw new AudioDecodeError('corrupt', `The file looks like ${this.label} but its samples are out of range.`);
    }
    this.produced += samples.length;
    const full: Float32Array[] = [];
    for (let at = 0; at < samples.length;) {
      const n = Math.min(samples.length - at, this.windowSamples - this.fill);
      this.window.set(samples.subarray(at, at + n), this.fill);
      this.fill += n;
      at += n;
      if (this.fill === this.windowSamples) {
        full.push(this.window);
        this.window = new Float32Array(this.windowSamples);
        this.fill = 0;
      }
    }
    return full;
  }
}

async function* wavBlocks(bytes: Uint8Array, header: ReturnType<typeof parseWavHeader>): AsyncGenerator<MonoBlock> {
  for (let from = 0; from < header.frames; from += WAV_BLOCK_FRAMES) {
    yield { samples: decodeWavToMono(bytes, header, from, from + WAV_BLOCK_FRAMES), sampleRate: header.sampleRate, channels: header.channels };
  }
}

/**
 * Decodes an upload as a stream of events: one header, then windows. Returns the summary once the last
 * window is out. Rejects with AudioDecodeError ('empty', 'unsupported', 'corrupt', 'truncated',
 * 'too_long') for anything wrong with the bytes, and with a RangeError for nonsensical options (a caller
 * bug). Stopping the iteration early frees the decoder.
 */
export async function* decodeAudioStream(bytes: Uint8Array, options: DecodeOptions): AsyncGenerator<DecodeEvent, DecodeSummary> {
  const { targetRate, maxDurationSeconds: max } = options;
  const windowSamples = options.windowSamples ?? DEFAULT_WINDOW_SECONDS * targetRate;
  if (!Number.isInteger(targetRate) || targetRate < 1000 || targetRate > 384_000)
    throw new RangeError(`targetRate must be an integer rate in Hz, got ${targetRate}`);
  if (!Number.isInteger(windowSamples) || windowSamples < 1) throw new RangeError(`windowSamples must be a positive integer, got ${windowSamples}`);
  if (bytes.length === 0) throw new AudioDecodeError('empty', 'The audio file is empty.');

  const container = detectContainer(bytes);
  if (!container) {
    throw new AudioDecodeError('unsupported', 'The file is not in a supported audio format (WAV, MP3, Ogg/Opus, Ogg/Vorbis, FLAC, WebM, MP4/M4A, AAC).');
  }
  let blocks: AsyncGenerator<MonoBlock>;
  let declaredSeconds: number | undefined;
  if (container.kind === 'wav') {
    const header = parseWavHeader(bytes);
    if (overLimit(header.durationSeconds, max)) throw tooLong(header.durationSeconds, max);
    if (header.frames === 0) throw new AudioDecodeError('empty', 'The file is a WAV file with no audio samples in it.');
    declaredSeconds = header.durationSeconds;
    blocks = wavBlocks(bytes, header);
  } else {
    // Refuse on the container's word before spending any decoding time; the windower re-checks as it goes.
    declaredSeconds = probeDurationSeconds(bytes, container);
    if (declaredSeconds !== undefined && overLimit(declaredSeconds, max)) throw tooLong(declaredSeconds, max);
    blocks = decodeCompressedBlocks(bytes, container);
  }
  yield { type: 'header', header: { container: container.kind, label: container.label, ...(declaredSeconds === undefined ? {} : { declaredSeconds }) } };

  const windower = new Windower(targetRate, windowSamples, container.label, max);
  try {
    for await (const block of blocks) {
      for (const samples of await windower.push(block)) yield { type: 'window', samples };
    }
    for (const samples of windower.finish()) yield { type: 'window', samples };
  } catch (error) {
    if (error instanceof AudioDecodeError || error instanceof DecoderUnavailableError) throw error;
    // Anything else is a parser or decoder tripping over these bytes: still the upload's problem, typed.
    throw new AudioDecodeError('corrupt', `The file looks like ${container.label} but could not be decoded: ${describe(error)}`);
  } finally {
    windower.close();
  }
  return {
    sampleRate: targetRate,
    durationSeconds: windower.produced / targetRate,
    container: container.kind,
    sourceSampleRate: windower.sourceRate,
    sourceChannels: windower.channels,
  };
}
