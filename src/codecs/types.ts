/**
 * The codec layer's contracts: the 13 speech output formats with their rates and media types, the one
 * streaming encoder interface every format implements, and the typed errors decoding raises (which the
 * API turns into 400 / 413 envelopes).
 */

export const SPEECH_FORMATS = ['pcm', 'wav', 'mp3', 'opus', 'ulaw', 'alaw', 'l16_8000', 'l16_16000', 'fmp4', 'wav_8k', 'ulaw_8k', 'aac', 'flac'] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

export interface FormatInfo {
  format: SpeechFormat;
  /** Content-Type of the response body (PROTOCOLS §6). */
  mediaType: string;
  /** Sample rate of the encoded audio. */
  sampleRate: number;
  lossless: boolean;
  /** Samples per codec frame at `sampleRate`: bytes can appear only once this many have been pushed. 1 = sample-by-sample. */
  frameSamples: number;
}

/**
 * Streaming encoder: push mono Float32 PCM (values in [-1, 1]) at the input rate it was created with, in
 * chunks of any size; each call resolves with the bytes that became ready (possibly empty). Nothing waits
 * for the whole utterance: bytes come out as soon as the codec has a frame.
 */
export interface StreamingEncoder {
  readonly info: FormatInfo;
  push(samples: Float32Array): Promise<Uint8Array>;
  /** Ends the stream: encodes what is buffered (padding the last frame) and returns the remaining bytes. */
  flush(): Promise<Uint8Array>;
  /** Releases resources without producing more output (cancellation). Safe to call at any time, twice. */
  close(): void;
}

/**
 * A format encoded at another rate (and, for MP3, bitrate) than its own: what the ElevenLabs names
 * (`pcm_22050`, `mp3_44100_128`, …) ask for. Only `pcm` and `mp3` take one (formats.ts, `variantInfo`).
 */
export interface EncodingVariant {
  sampleRate: number;
  /** MP3 only: the constant bitrate in kbit/s (the format's own when absent). */
  bitrateKbps?: number;
}

export interface EncoderOptions {
  /** Rate of the PCM given to push(); the encoder resamples to its format's rate. */
  inputRate: number;
  /** Encode at this rate (and bitrate) instead of the format's own; refused for a format that takes none. */
  variant?: EncodingVariant;
  /** Whose stream it is: the encoder pool shares its threads' turns fairly between accounts. */
  account?: string;
}

export type AudioErrorKind = 'empty' | 'unsupported' | 'corrupt' | 'truncated' | 'too_long' | 'timeout';

/** A problem with the audio a client sent. `too_long` maps to 413 audio_too_large, the rest to 400. */
export class AudioDecodeError extends Error {
  constructor(
    readonly kind: AudioErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'AudioDecodeError';
  }
}

export interface DecodedAudio {
  /** Mono samples at `sampleRate` (the rate asked for). */
  samples: Float32Array;
  sampleRate: number;
  durationSeconds: number;
  /** What the bytes turned out to be: `wav`, `mp3`, `ogg-opus`, `ogg-vorbis`, `flac`, `webm`, `mp4`, `adts`. */
  container: string;
  sourceSampleRate: number;
  sourceChannels: number;
}

/** The decoder pool's wait queue is full: the server is overloaded, try again after `retryAfterSeconds`. */
export class DecoderBusyError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super(`Every audio decoder is busy and the wait queue is full; retry after ${retryAfterSeconds} s.`);
    this.name = 'DecoderBusyError';
  }
}

/**
 * The decoder thread running this upload had to be restarted because of another upload (one that hung
 * or crashed it). Nothing is wrong with this upload: sending it again works.
 */
export class DecoderRestartedError extends Error {
  constructor() {
    super('The audio decoder was restarted while decoding this file because of another upload; send it again.');
    this.name = 'DecoderRestartedError';
  }
}

/**
 * The encoder worker thread serving this stream stopped (it crashed, or the pool was shut down): the
 * stream cannot go on. Only the streams pinned to that thread fail; the pool replaces the thread.
 */
export class EncoderThreadError extends Error {
  constructor(detail: string) {
    super(`The audio encoder thread serving this stream stopped (${detail}); the stream cannot continue.`);
    this.name = 'EncoderThreadError';
  }
}
