/**
 * Upload decoding: bytes of any supported container → mono Float32 at the rate a model wants.
 * Steps: detect the container from the bytes, refuse it early if its header already declares more than
 * `maxDurationSeconds`, decode (our WAV parser, audio-decode for the compressed formats), downmix to mono
 * (mean of the channels), resample. Every failure is an AudioDecodeError: the caller maps it to a 400
 * (or 413 for too_long) without looking at library errors.
 *
 * This runs on whichever thread calls it and blocks that thread while WASM decodes; servers call it
 * through DecoderPool (decoder-pool.ts), which runs it in worker threads with a timeout.
 */
import { resample } from '../resample.js';
import { AudioDecodeError, type DecodedAudio } from '../types.js';
import { probeDurationSeconds } from './container-probe.js';
import { decodeCompressed, DecoderUnavailableError, describe } from './decode-compressed.js';
import { detectContainer, type DetectedContainer } from './detect-container.js';
import { decodeWavToMono, parseWavHeader } from './wav.js';

export interface DecodeOptions {
  /** Rate of the returned samples, in Hz. */
  targetRate: number;
  /** Longer audio is refused with AudioDecodeError('too_long'). */
  maxDurationSeconds?: number;
}

/**
 * Codecs pad: priming samples, a last frame filled out, MP4 edit lists rounding up. An upload of exactly
 * the limit must not be refused for its codec's few milliseconds, so the limit is enforced with this slack.
 */
const DURATION_SLACK_SECONDS = 0.1;

const overLimit = (seconds: number, max: number | undefined): boolean => max !== undefined && seconds > max + DURATION_SLACK_SECONDS;

function tooLong(seconds: number, max: number | undefined): AudioDecodeError {
  return new AudioDecodeError('too_long', `The audio lasts ${seconds.toFixed(1)} s, more than the ${max ?? '?'} s limit.`);
}

function decodeWav(bytes: Uint8Array, max: number | undefined): { samples: Float32Array; sampleRate: number; channels: number } {
  const header = parseWavHeader(bytes);
  if (overLimit(header.durationSeconds, max)) throw tooLong(header.durationSeconds, max);
  if (header.frames === 0) throw new AudioDecodeError('empty', 'The file is a WAV file with no audio samples in it.');
  return { samples: decodeWavToMono(bytes, header), sampleRate: header.sampleRate, channels: header.channels };
}

async function decodeOther(bytes: Uint8Array, container: DetectedContainer, max: number | undefined): ReturnType<typeof decodeCompressed> {
  // Refuse on the container's word before spending any decoding time; decodeCompressed re-checks as it goes.
  const declared = probeDurationSeconds(bytes, container);
  if (declared !== undefined && overLimit(declared, max)) throw tooLong(declared, max);
  return decodeCompressed(bytes, container, max === undefined ? undefined : { maxSeconds: max, slackSeconds: DURATION_SLACK_SECONDS });
}

/**
 * Decodes an upload to mono Float32 at `options.targetRate`. Rejects with AudioDecodeError ('empty',
 * 'unsupported', 'corrupt', 'truncated', 'too_long') for anything wrong with the bytes, and with a
 * RangeError for a nonsensical targetRate (a caller bug).
 */
export async function decodeAudio(bytes: Uint8Array, options: DecodeOptions): Promise<DecodedAudio> {
  const { targetRate, maxDurationSeconds: max } = options;
  if (!Number.isInteger(targetRate) || targetRate < 1000 || targetRate > 384_000) throw new RangeError(`targetRate must be an integer rate in Hz, got ${targetRate}`);
  if (bytes.length === 0) throw new AudioDecodeError('empty', 'The audio file is empty.');

  const container = detectContainer(bytes);
  if (!container) {
    throw new AudioDecodeError('unsupported', 'The file is not in a supported audio format (WAV, MP3, Ogg/Opus, Ogg/Vorbis, FLAC, WebM, MP4/M4A, AAC).');
  }

  let decoded: { samples: Float32Array; sampleRate: number; channels: number };
  try {
    decoded = container.kind === 'wav' ? decodeWav(bytes, max) : await decodeOther(bytes, container, max);
  } catch (error) {
    if (error instanceof AudioDecodeError || error instanceof DecoderUnavailableError) throw error;
    // Anything else is a parser or decoder tripping over these bytes: still the upload's problem, typed.
    throw new AudioDecodeError('corrupt', `The file looks like ${container.label} but could not be decoded: ${describe(error)}`);
  }
  const { samples: mono, sampleRate: sourceRate, channels: sourceChannels } = decoded;

  const durationSeconds = mono.length / sourceRate;
  if (overLimit(durationSeconds, max)) throw tooLong(durationSeconds, max);

  let samples: Float32Array;
  try {
    samples = sourceRate === targetRate ? mono : await resample(mono, sourceRate, targetRate);
  } catch (error) {
    // A damaged header can make a decoder report a rate the resampler refuses (fractional, absurd).
    throw new AudioDecodeError('unsupported', `The file's sample rate ${sourceRate} Hz cannot be converted: ${error instanceof Error ? error.message : String(error)}`);
  }
  // Finite input can still overflow the filter when float samples sit near float32's limit.
  for (let i = 0; i < samples.length; i++) {
    if (!Number.isFinite(samples[i]!)) throw new AudioDecodeError('corrupt', `The file looks like ${container.label} but its samples are out of range.`);
  }
  if (samples.length === 0) throw new AudioDecodeError('corrupt', `The file looks like ${container.label} but contains no audio.`);

  return {
    samples,
    sampleRate: targetRate,
    durationSeconds: samples.length / targetRate,
    container: container.kind,
    sourceSampleRate: sourceRate,
    sourceChannels,
  };
}
