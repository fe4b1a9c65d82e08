/**
 * The one encode loop of speech: REST bodies (speech-stream.ts), the speech sockets' and the calls' phrase
 * speaker (phrase-speaker.ts) and a call's `play` file or DTMF tones (encodeClip) all push their samples
 * through a PhraseEncoder. It owns one encoder for a whole stream of phrases (so a container format stays one
 * valid stream however the text was split), feeds it in slices, keeps the stream's clock (input samples
 * pushed), and knows where each phrase lies on that clock — from which it says which characters the bytes
 * handed out so far speak.
 *
 * Slices: the first is short, so the first bytes leave after a slice's worth of work; each later one
 * doubles, up to a maximum, because every slice costs a push, a socket write and a client read whatever its
 * length — under load (50 streams at once, load-tests/tts) those fixed costs on the I/O thread, not synthesis,
 * decided the time to first byte of everyone else. A stream is far ahead of real time after its first slice,
 * so larger later slices delay no one's playback. A pause (drain) starts the doubling again.
 *
 * What bytes cover: an encoder may hold back up to `encoderLagSamples` of what it was given, so the bytes
 * handed out after pushing N samples cover N − lag of them; after a drain (the lag pushed as silence) or the
 * final flush they cover everything pushed before.
 */
import type { EncoderSource } from '../codecs/encoders/speech-encoders.js';
import { createEncoder } from '../codecs/encoders/index.js';
import type { EncodingVariant, FormatInfo, SpeechFormat, StreamingEncoder } from '../codecs/types.js';

/** Encoder slices of a listener's stream (seconds): the first after a pause, and the most the doubling reaches. */
export const SLICE_SECONDS_FIRST = 0.1;
export const SLICE_SECONDS_MAX = 0.8;
/**
 * Codec frames an encoder may hold back behind what it has returned: measured 4.3 frames for LAME (0.10 s)
 * and 3 for ffmpeg's AAC (0.13 s, up to 6 with a foreign ffmpeg; see aac.ts); 8 leaves a margin.
 */
const LAG_FRAMES = 8;
/** The resampler's delay (measured 40 samples, 2.5 ms, at 16 kHz → 24 kHz), with margin. */
const RESAMPLER_LAG_SECONDS = 0.01;

/** Input samples (at `inputRate`) that may have been pushed into this encoder without being in its output yet. */
export function encoderLagSamples(info: FormatInfo, inputRate: number): number {
  const codecSeconds = info.frameSamples > 1 ? (LAG_FRAMES * info.frameSamples) / info.sampleRate : 0;
  return Math.ceil((codecSeconds + RESAMPLER_LAG_SECONDS) * inputRate);
}

export interface EncoderOutput {
  format: SpeechFormat;
  /** The format at another rate (ElevenLabs' pcm_22050, mp3_44100_128…); the format's own when absent. */
  variant?: EncodingVariant;
  /** Whose speech this is: the encoder pool shares its turns fairly between accounts. */
  account?: string;
  /** The server's encoders; the process-wide ones when absent (code outside a server: tests, benches). */
  encoders?: EncoderSource;
}

export interface SliceSeconds {
  first: number;
  max: number;
}

/** Bytes the encoder returned for one slice, and the input samples that all bytes so far cover. */
export interface EncodedSlice {
  bytes: Uint8Array;
  covered: number;
}

export class PhraseEncoder {
  private encoder: StreamingEncoder | null = null;
  private rate = 0;
  private lag = 0;
  private pushed = 0;
  private sliceSeconds: number;
  /** Phrases with characters, on the clock, in order. */
  private readonly phrases: Array<{ start: number; length: number; characters: number }> = [];
  private fullyCovered = 0; // phrases wholly covered so far
  private fullCharacters = 0; // their characters

  constructor(
    private readonly output: EncoderOutput,
    private readonly slices: SliceSeconds = { first: SLICE_SECONDS_FIRST, max: SLICE_SECONDS_MAX },
  ) {
    this.sliceSeconds = slices.first;
  }

  /** Whether the first phrase has come (the encoder exists). */
  get started(): boolean {
    return this.encoder !== null;
  }

  /** The stream's clock: ms of audio pushed so far (0 before the first phrase). */
  get clockMs(): number {
    return this.rate ? (this.pushed / this.rate) * 1000 : 0;
  }

  /** Input samples pushed so far; what the bytes returned cover is this less the lag. */
  get pushedSamples(): number {
    return this.pushed;
  }

  get lagSamples(): number {
    return this.lag;
  }

  /**
   * Encodes one phrase that speaks `characters` input characters, slice by slice, yielding each non-empty
   * output. The first phrase's rate becomes the encoder's input rate (a voice speaks at one rate).
   */
  async *phrase(samples: Float32Array, sampleRate: number, characters: number): AsyncGenerator<EncodedSlice> {
    if (!this.encoder) {
      const { format, variant, account, encoders } = this.output;
      this.encoder = await createEncoder(
        format,
        { inputRate: sampleRate, ...(account !== undefined ? { account } : {}), ...(variant ? { variant } : {}) },
        encoders,
      );
      this.rate = sampleRate;
      this.lag = encoderLagSamples(this.encoder.info, sampleRate);
    }
    if (characters > 0) this.phrases.push({ start: this.pushed, length: samples.length, characters });
    for (let offset = 0; offset < samples.length;) {
      const slice = Math.max(1, Math.round(sampleRate * this.sliceSeconds));
      this.sliceSeconds = Math.min(this.slices.max, this.sliceSeconds * 2);
      const bytes = await this.push(samples.subarray(offset, offset + slice));
      offset += slice;
      if (bytes.length) yield { bytes, covered: this.pushed - this.lag };
    }
  }

  /**
   * Pushes the encoder's lookahead as silence, so every sample of the phrases taken so far is in its output
   * (null before the first phrase). The next phrase starts the slices short again.
   */
  async drain(): Promise<EncodedSlice | null> {
    if (!this.encoder) return null;
    const covered = this.pushed;
    const bytes = await this.push(new Float32Array(this.lag));
    this.sliceSeconds = this.slices.first;
    return { bytes, covered };
  }

  /** Ends the encoded stream (the codec's last frame, a container's end): these bytes cover everything. */
  async finish(): Promise<Uint8Array> {
    return this.encoder ? this.encoder.flush() : new Uint8Array(0);
  }

  close(): void {
    this.encoder?.close();
  }

  /** Characters of the phrases whose audio lies wholly within the first `covered` samples. */
  charactersComplete(covered: number): number {
    while (this.fullyCovered < this.phrases.length) {
      const p = this.phrases[this.fullyCovered]!;
      if (p.start + p.length > covered) break;
      this.fullCharacters += p.characters;
      this.fullyCovered++;
    }
    return this.fullCharacters;
  }

  /** As charactersComplete, plus the share of the phrase in progress that its covered samples make up, rounded down. */
  charactersDelivered(covered: number): number {
    const whole = this.charactersComplete(covered);
    const partial = this.phrases[this.fullyCovered];
    if (!partial || covered <= partial.start) return whole;
    return whole + Math.floor((partial.characters * (covered - partial.start)) / partial.length);
  }

  private async push(samples: Float32Array): Promise<Uint8Array> {
    const bytes = await this.encoder!.push(samples);
    this.pushed += samples.length;
    return bytes;
  }
}

/**
 * Audio that is not speech of text (a call's `play` file, DTMF tones): `samples` encoded in one-second slices,
 * `loop` times (0: until `signal`), then the encoder's end. Nothing in it is charged.
 */
export async function* encodeClip(
  encoders: EncoderSource,
  format: SpeechFormat,
  samples: Float32Array,
  sampleRate: number,
  loop: number,
  signal: AbortSignal,
): AsyncGenerator<Uint8Array> {
  const encoder = new PhraseEncoder({ format, encoders }, { first: 1, max: 1 });
  try {
    for (let round = 0; (loop === 0 || round < loop) && !signal.aborted && samples.length; round++) {
      for await (const slice of encoder.phrase(samples, sampleRate, 0)) {
        yield slice.bytes;
        if (signal.aborted) break;
      }
    }
    yield await encoder.finish();
  } finally {
    encoder.close();
  }
}
