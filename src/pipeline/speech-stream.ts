/**
 * The text-to-speech streaming pipeline: TTS engine (phrase by phrase, in its worker) → encoder (which
 * resamples to its format's rate) → bytes, every stage pulled by the one after it, so a slow client
 * slows synthesis down instead of filling memory, and leaving early cancels the engine job.
 *
 * Billing follows what was delivered: a phrase's input characters count once its audio has been handed on
 * and the consumer came back for more (or the stream finished). The tally is exposed so the caller can
 * charge exactly that, whether the stream completed, failed midway, or the client left.
 */
import { createEncoder } from '../codecs/encoders/index.js';
import type { SpeechFormat, StreamingEncoder } from '../codecs/types.js';

export interface PcmChunk {
  samples: Float32Array;
  sampleRate: number;
  /** Input characters this chunk speaks. */
  characters: number;
}

/** Encoder input slice: short enough for a fast first chunk, long enough to keep per-push costs small. */
const SLICE_SECONDS = 0.1;

export interface SpeechTally {
  /** Input characters whose audio went out in full. */
  charactersDelivered: number;
  bytesDelivered: number;
}

/**
 * Encodes a stream of PCM chunks into `format`, yielding bytes as soon as the codec has them. The first
 * chunk's rate becomes the encoder's input rate (a model speaks at one rate).
 */
export async function* encodeSpeech(pcm: AsyncIterable<PcmChunk>, format: SpeechFormat, tally: SpeechTally): AsyncGenerator<Uint8Array> {
  let encoder: StreamingEncoder | null = null;
  let pendingCharacters = 0;
  try {
    for await (const chunk of pcm) {
      encoder ??= await createEncoder(format, { inputRate: chunk.sampleRate });
      // A model hands over a whole phrase (seconds of audio). Encoding it in short slices lets the first
      // bytes leave after one slice's worth of work instead of the whole phrase's.
      const slice = Math.max(1, Math.round(chunk.sampleRate * SLICE_SECONDS));
      for (let offset = 0; offset < chunk.samples.length; offset += slice) {
        const last = offset + slice >= chunk.samples.length;
        const bytes = await encoder.push(chunk.samples.subarray(offset, offset + slice));
        if (last) pendingCharacters += chunk.characters;
        if (bytes.length === 0) continue;
        yield bytes;
        // Back here means the consumer took the bytes and asked for more: what they carried is delivered.
        tally.bytesDelivered += bytes.length;
        tally.charactersDelivered += pendingCharacters;
        pendingCharacters = 0;
      }
    }
    if (encoder) {
      const tail = await encoder.flush();
      if (tail.length > 0) yield tail;
      tally.bytesDelivered += tail.length;
    }
    tally.charactersDelivered += pendingCharacters;
  } finally {
    encoder?.close();
  }
}
