/**
 * The text-to-speech streaming pipeline of a REST body: TTS engine (phrase by phrase, in its worker) →
 * encoder (phrase-encoder.ts, which resamples to its format's rate) → bytes, every stage pulled by the one
 * after it, so a slow client slows synthesis down instead of filling memory, and leaving early cancels the
 * engine job.
 *
 * Billing follows the audio delivered (README, "Speech"): bytes count as delivered once the consumer took
 * them and came back for more (the transport writes before it pulls again). Those bytes encode the samples
 * pushed so far less what the encoder may still hold back (`encoderLagSamples`), so a phrase is charged the
 * share of its characters that its delivered samples make up, rounded down; every phrase counts in full
 * once the stream has ended and its last bytes were taken. The tally is exposed so the caller charges, and
 * reports, exactly that — whether the stream completed, failed midway, or the client left.
 */
import type { EncoderSource } from '../codecs/encoders/speech-encoders.js';
import type { EncodingVariant, SpeechFormat } from '../codecs/types.js';
import type { AudioChunker } from './audio-chunks.js';
import { PhraseEncoder } from './phrase-encoder.js';

export interface PcmChunk {
  samples: Float32Array;
  sampleRate: number;
  /** Input characters this chunk speaks. */
  characters: number;
}

export interface SpeechTally {
  /** Input characters whose audio was delivered: whole phrases, plus the delivered share of one in progress. */
  charactersDelivered: number;
  bytesDelivered: number;
}

/**
 * Encodes a stream of PCM chunks into `format`, yielding bytes as soon as the codec has them. If the PCM
 * source fails, the audio already synthesized is flushed out before the error goes on, so the body ends at
 * the point reached.
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
  /** The server's encoders; the process-wide ones when absent (tests). */
  encoders?: EncoderSource,
): AsyncGenerator<Uint8Array> {
  const encoder = new PhraseEncoder({
    format,
    ...(account !== undefined ? { account } : {}),
    ...(variant ? { variant } : {}),
    ...(encoders ? { encoders } : {}),
  });
  // Back from a yield means the consumer took the bytes and asked for more: they are delivered.
  const delivered = (bytes: number, covered: number) => {
    tally.bytesDelivered += bytes;
    tally.charactersDelivered = Math.max(tally.charactersDelivered, encoder.charactersDelivered(covered));
  };
  let inputRate = 0;
  const heldSamples = () => (chunker ? Math.ceil(chunker.heldSeconds() * inputRate) : 0);
  let failure: { error: unknown } | undefined;
  try {
    try {
      for await (const chunk of pcm) {
        inputRate ||= chunk.sampleRate;
        for await (const slice of encoder.phrase(chunk.samples, chunk.sampleRate, chunk.characters)) {
          if (!chunker) {
            yield slice.bytes;
            delivered(slice.bytes.length, slice.covered);
            continue;
          }
          chunker.append(slice.bytes);
          for (let out = chunker.next(); out; out = chunker.next()) {
            yield out;
            delivered(out.length, encoder.pushedSamples - encoder.lagSamples - heldSamples());
          }
        }
      }
    } catch (error) {
      failure = { error };
    }
    let tail: Uint8Array = new Uint8Array(0);
    try {
      tail = await encoder.finish();
    } catch (error) {
      // After a source failure, that failure is the one to report; the audio it cut short is not billed.
      if (failure) throw failure.error;
      throw error;
    }
    if (chunker) {
      chunker.append(tail);
      for (let out = chunker.next() ?? chunker.rest(); out; out = chunker.next() ?? chunker.rest()) {
        yield out;
        delivered(out.length, encoder.pushedSamples - heldSamples());
      }
      tail = new Uint8Array(0);
    } else if (tail.length > 0) yield tail;
    // Everything pushed is out: every phrase that reached the encoder counts in full.
    delivered(tail.length, Number.POSITIVE_INFINITY);
    if (failure) throw failure.error;
  } finally {
    encoder.close();
  }
}
