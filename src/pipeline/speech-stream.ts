/**
 * The text-to-speech streaming pipeline: TTS engine (phrase by phrase, in its worker) → encoder (which
 * resamples to its format's rate) → bytes, every stage pulled by the one after it, so a slow client
 * slows synthesis down instead of filling memory, and leaving early cancels the engine job.
 *
 * Billing follows the audio delivered (README, "Speech"): bytes count as delivered once the consumer took
 * them and came back for more (the transport writes before it pulls again). Those bytes encode the samples
 * pushed so far less what the encoder may still hold back (`encoderLagSamples`), so a phrase is charged the
 * share of its characters that its delivered samples make up, rounded down; every phrase counts in full
 * once the stream has ended and its last bytes were taken. The tally is exposed so the caller charges, and
 * reports, exactly that — whether the stream completed, failed midway, or the client left.
 */
import { createEncoder } from '../codecs/encoders/index.js';
import type { EncoderSource } from '../codecs/encoders/speech-encoders.js';
import type { EncodingVariant, FormatInfo, SpeechFormat, StreamingEncoder } from '../codecs/types.js';
import type { AudioChunker } from './audio-chunks.js';

export interface PcmChunk {
  samples: Float32Array;
  sampleRate: number;
  /** Input characters this chunk speaks. */
  characters: number;
}

/**
 * Encoder input slices: the first is short (0.1 s), so the first bytes leave after a slice's worth of work;
 * each later one doubles, up to SLICE_SECONDS_MAX, because every slice costs a push, a socket write and a
 * client read whatever its length — under load (50 streams at once, load-tests/tts) those fixed costs on the
 * I/O thread, not synthesis, decided the time to first byte of everyone else. A stream is far ahead of real
 * time after its first slice, so larger later slices delay no one's playback.
 */
export const SLICE_SECONDS_FIRST = 0.1;
export const SLICE_SECONDS_MAX = 0.8;
/**
 * Codec frames an encoder may hold back behind what it has returned: measured 4.3 frames for LAME (0.10 s)
 * and 3 for ffmpeg's AAC (0.13 s, up to 6 with a foreign ffmpeg; see aac.ts); 8 leaves a margin.
 */
const LAG_FRAMES = 8;
/** The resampler's delay (measured 40 samples, 2.5 ms, at 16 kHz → 24 kHz), with margin. */
const RESAMPLER_LAG_SECONDS = 0.01;

export interface SpeechTally {
  /** Input characters whose audio was delivered: whole phrases, plus the delivered share of one in progress. */
  charactersDelivered: number;
  bytesDelivered: number;
}

/** Input samples (at `inputRate`) that may have been pushed into this encoder without being in its output yet. */
export function encoderLagSamples(info: FormatInfo, inputRate: number): number {
  const codecSeconds = info.frameSamples > 1 ? (LAG_FRAMES * info.frameSamples) / info.sampleRate : 0;
  return Math.ceil((codecSeconds + RESAMPLER_LAG_SECONDS) * inputRate);
}

/** The phrases pushed so far, on one sample axis, and the characters their delivered samples cover. */
class DeliveryMeter {
  private readonly phrases: Array<{ start: number; length: number; characters: number }> = [];
  private pushed = 0;
  private fullyCovered = 0; // phrases wholly delivered
  private fullCharacters = 0; // their characters

  /** Called before the phrase's samples are pushed, once the previous phrase's have all been. */
  addPhrase(length: number, characters: number): void {
    this.phrases.push({ start: this.pushed, length, characters });
  }

  /** Samples of the phrases handed to the encoder (the phrase being sliced counts as it goes). */
  pushedSamples(count: number): void {
    this.pushed += count;
  }

  /** Characters delivered when the first `covered` samples have gone out. */
  charactersAt(covered: number): number {
    while (this.fullyCovered < this.phrases.length) {
      const p = this.phrases[this.fullyCovered]!;
      if (p.start + p.length > covered) break;
      this.fullCharacters += p.characters;
      this.fullyCovered++;
    }
    const partial = this.phrases[this.fullyCovered];
    if (!partial || covered <= partial.start) return this.fullCharacters;
    return this.fullCharacters + Math.floor((partial.characters * (covered - partial.start)) / partial.length);
  }

  get pushedSoFar(): number {
    return this.pushed;
  }
}

/**
 * Encodes a stream of PCM chunks into `format`, yielding bytes as soon as the codec has them. The first
 * chunk's rate becomes the encoder's input rate (a model speaks at one rate). If the PCM source fails, the
 * audio already synthesized is flushed out before the error goes on, so the body ends at the point reached.
 *
 * With a `chunker` (audio-chunks.ts) the bytes leave in chunks of a fixed length of audio instead; what the
 * chunker holds back has not been delivered, so it is taken off the samples counted as delivered.
 */
export async function* encodeSpeech(
  pcm: AsyncIterable<PcmChunk>,
  format: SpeechFormat,
  tally: SpeechTally,
  chunker?: AudioChunker,
  account?: string,
  variant?: EncodingVariant,
  /** The server's encoders; absent = the process-wide ones (tests). */
  encoders?: EncoderSource,
): AsyncGenerator<Uint8Array> {
  let encoder: StreamingEncoder | null = null;
  let lag = 0;
  let sliceSeconds = SLICE_SECONDS_FIRST;
  const meter = new DeliveryMeter();
  // Back from a yield means the consumer took the bytes and asked for more: they are delivered.
  const delivered = (bytes: number, covered: number) => {
    tally.bytesDelivered += bytes;
    tally.charactersDelivered = Math.max(tally.charactersDelivered, meter.charactersAt(covered));
  };
  let inputRate = 0;
  const heldSamples = () => (chunker ? Math.ceil(chunker.heldSeconds() * inputRate) : 0);
  let failure: { error: unknown } | undefined;
  try {
    try {
      for await (const chunk of pcm) {
        if (!encoder) {
          encoder = await createEncoder(format, { inputRate: chunk.sampleRate, ...(account !== undefined ? { account } : {}), ...(variant ? { variant } : {}) }, encoders);
          lag = encoderLagSamples(encoder.info, chunk.sampleRate);
          inputRate = chunk.sampleRate;
        }
        meter.addPhrase(chunk.samples.length, chunk.characters);
        // A model hands over a whole phrase (seconds of audio). Encoding it in short slices lets the first
        // bytes leave after one slice's worth of work instead of the whole phrase's.
        for (let offset = 0; offset < chunk.samples.length; ) {
          const slice = Math.max(1, Math.round(chunk.sampleRate * sliceSeconds));
          sliceSeconds = Math.min(SLICE_SECONDS_MAX, sliceSeconds * 2);
          const samples = chunk.samples.subarray(offset, offset + slice);
          offset += slice;
          const bytes = await encoder.push(samples);
          meter.pushedSamples(samples.length);
          if (bytes.length === 0) continue;
          if (!chunker) {
            yield bytes;
            delivered(bytes.length, meter.pushedSoFar - lag);
            continue;
          }
          chunker.append(bytes);
          for (let out = chunker.next(); out; out = chunker.next()) {
            yield out;
            delivered(out.length, meter.pushedSoFar - lag - heldSamples());
          }
        }
      }
    } catch (error) {
      failure = { error };
    }
    let tail: Uint8Array = new Uint8Array(0);
    try {
      if (encoder) tail = await encoder.flush();
    } catch (error) {
      // After a source failure, that failure is the one to report; the audio it cut short is not billed.
      if (failure) throw failure.error;
      throw error;
    }
    if (chunker) {
      chunker.append(tail);
      for (let out = chunker.next() ?? chunker.rest(); out; out = chunker.next() ?? chunker.rest()) {
        yield out;
        delivered(out.length, meter.pushedSoFar - heldSamples());
      }
      tail = new Uint8Array(0);
    } else if (tail.length > 0) yield tail;
    // Everything pushed is out: every phrase that reached the encoder counts in full.
    delivered(tail.length, Number.POSITIVE_INFINITY);
    if (failure) throw failure.error;
  } finally {
    encoder?.close();
  }
}
