/**
 * Speaks phrases that arrive over time (a text stream, text-phrase-splitter.ts) as ONE continuous encoded
 * audio stream: phrases are queued with `say()`, synthesized by the phrase producer (phrase-synthesis.ts) and
 * encoded by one encoder for the whole stream (phrase-encoder.ts), so that a container format (wav, ogg/opus,
 * mp3, fmp4) stays a single valid stream however the text was split.
 *
 * Pull-based: audio is encoded only when the consumer asks for the next item, and synthesis runs at most
 * `ahead` phrases beyond the one being encoded. A consumer that stops pulling (a client that does not read)
 * stops synthesis, and holds no replica while it waits. Aborting `signal` (the client left) cancels the job
 * in flight and ends the stream.
 *
 * When everything said so far has been encoded and no phrase is waiting (the text source is slower than
 * speech), the encoder is given silence as long as its lookahead (`encoderLagSamples`: a few codec frames
 * for mp3/opus/aac, ~10 ms for PCM formats) so that the last words already said leave now rather than when
 * more text comes. That silence is part of the stream's clock.
 *
 * Each item says which phrases its bytes complete (`charactersComplete`, cumulative, whole phrases only) and
 * carries the character alignment of the phrases that began since the last item. Alignment times are on the
 * stream's clock (ms since its first sample). The voices do not report durations per character, so a
 * phrase's duration is spread evenly over its characters: an estimate, good to a phrase.
 */
import type { EncoderSource } from '../codecs/encoders/speech-encoders.js';
import type { EncodingVariant, SpeechFormat } from '../codecs/types.js';
import { speechText } from '../engines/tts/speech-text.js';
import type { TextChunk } from '../engines/tts/text-chunker.js';
import { PhraseEncoder, type SliceSeconds } from './phrase-encoder.js';
import { PhraseSynthesizer, type PhraseEngine, type SynthesizedPhrase, type Voice } from './phrase-synthesis.js';

export interface CharacterAlignment {
  chars: string[];
  charStartTimesMs: number[];
  charDurationsMs: number[];
}

export interface PhraseAlignment {
  /** The phrase's text as received (whitespace collapsed). */
  text: CharacterAlignment;
  /** What the voice says for it (digits as words, punctuation as pauses). */
  spoken: CharacterAlignment;
}

export interface SpokenAudio {
  /** Encoded bytes; may be empty when the item only reports alignment or completed phrases. */
  bytes: Uint8Array;
  /** Alignments of phrases whose audio began since the previous item. */
  alignments: PhraseAlignment[];
  /** Characters of the phrases whose audio is wholly in the bytes up to and including this item's. */
  charactersComplete: number;
}

export interface SpeakerOptions {
  /** The server's encoders; the process-wide ones when absent (tests). */
  encoders?: EncoderSource;
  engine: PhraseEngine;
  voice: Voice;
  format: SpeechFormat;
  /** The format at another rate (ElevenLabs' pcm_22050, mp3_44100_128…); the format's own when absent. */
  variant?: EncodingVariant;
  /** The voice's alphabet (speech-text.ts); null when the engine reports none (the phrase text is spoken as is). */
  speakable: ReadonlySet<string> | null;
  account: string;
  signal: AbortSignal;
  /** Phrases synthesized ahead of the one being encoded. */
  ahead?: number;
  /**
   * Seconds of audio per encoder slice: the first after a pause, and the most the doubling reaches. The
   * default (0.1 s, up to 0.8 s) lets a listener's first bytes leave early. A consumer that paces the audio
   * itself (a phone line) takes longer slices: each slice is one trip through the encoder pool, and under load
   * a short slice plays out before the next one is back.
   */
  slices?: SliceSeconds;
}

export class PhraseSpeaker implements AsyncIterable<SpokenAudio> {
  private readonly synthesizer: PhraseSynthesizer;
  private carried = 0; // characters of phrases with nothing to say, charged with the next spoken one

  constructor(private readonly options: SpeakerOptions) {
    const { engine, voice, account, signal, ahead } = options;
    this.synthesizer = new PhraseSynthesizer({ engine, voice, account, signal, ...(ahead !== undefined ? { ahead } : {}) });
  }

  /** Queues a phrase. A phrase with nothing to say is not synthesized: its characters go with the next one. */
  say(chunk: TextChunk): void {
    // Stopped (aborted, or a phrase failed): nothing more will be spoken, and the stream reports why.
    if (this.synthesizer.stopped) return;
    if (this.synthesizer.allAdded) throw new Error('PhraseSpeaker: say() after end()');
    const spoken = this.options.speakable ? speechText(chunk.text, this.options.speakable).text : chunk.text;
    if (!spoken) {
      this.carried += chunk.characters;
      return;
    }
    this.synthesizer.add({ text: chunk.text, spoken, characters: chunk.characters + this.carried, boundaryAfter: true });
    this.carried = 0;
  }

  /** No more phrases: once the queued ones are spoken the encoder is flushed and the stream ends. */
  end(): void {
    this.synthesizer.end();
  }

  /** Whether phrases are queued, being synthesized or waiting to be read: audio is owed. */
  get owesAudio(): boolean {
    return this.synthesizer.owed;
  }

  /** Characters queued and not yet synthesized (the job in flight included). */
  get unsynthesizedCharacters(): number {
    return this.synthesizer.unsynthesizedCharacters + this.carried;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<SpokenAudio> {
    const { format, variant, account, encoders } = this.options;
    const stream = new AlignedStream(
      new PhraseEncoder({ format, account, ...(variant ? { variant } : {}), ...(encoders ? { encoders } : {}) }, this.options.slices),
    );
    const synthesizer = this.synthesizer;
    try {
      for (;;) {
        if (!synthesizer.hasReady && !synthesizer.stopped && synthesizer.caughtUp && !synthesizer.allAdded && !synthesizer.opening) {
          // Everything said so far is encoded and no text waits: let the last words leave now, not with the next text.
          yield* stream.drain();
          synthesizer.opening = true;
          // Look again: more text, or the end, may have come while the drained audio was being taken.
          continue;
        }
        // The next phrase, or the end: all phrases spoken, a phrase failed, or stopped (what was ready comes first).
        const next = await synthesizer.next();
        if (!next) break;
        yield* stream.phrase(next);
      }
      // A failed phrase ends the stream after the audio before it, which leaves first.
      if (!synthesizer.cancelled) yield* stream.finish();
      const failure = synthesizer.failure;
      if (failure) throw failure.error;
    } finally {
      stream.close();
      synthesizer.stop();
    }
  }
}

/** The encoded stream with each phrase's character alignment and the phrases its bytes complete. */
class AlignedStream {
  private alignments: PhraseAlignment[] = [];
  private reported = 0; // charactersComplete of the last item

  constructor(private readonly encoder: PhraseEncoder) {}

  async *phrase(p: SynthesizedPhrase): AsyncGenerator<SpokenAudio> {
    const startMs = this.encoder.clockMs;
    const durationMs = (p.samples.length / p.sampleRate) * 1000;
    // The phrase ends with the voice's word boundary (a pause): a space after its characters.
    this.alignments.push({ text: spread(`${p.text} `, startMs, durationMs), spoken: spread(`${p.spoken} `, startMs, durationMs) });
    for await (const slice of this.encoder.phrase(p.samples, p.sampleRate, p.characters)) yield this.item(slice.bytes, slice.covered);
  }

  /** The encoder's lookahead pushed as silence: every phrase taken so far is complete in the bytes. */
  async *drain(): AsyncGenerator<SpokenAudio> {
    const drained = await this.encoder.drain();
    if (!drained) return;
    const reportedBefore = this.reported;
    const item = this.item(drained.bytes, drained.covered);
    if (drained.bytes.length || item.alignments.length || item.charactersComplete > reportedBefore) yield item;
  }

  /** Ends the encoded stream (the codec's last frame, a container's end). */
  async *finish(): AsyncGenerator<SpokenAudio> {
    if (!this.encoder.started) return;
    yield this.item(await this.encoder.finish(), Number.POSITIVE_INFINITY);
  }

  close(): void {
    this.encoder.close();
  }

  private item(bytes: Uint8Array, covered: number): SpokenAudio {
    const charactersComplete = this.encoder.charactersComplete(covered);
    this.reported = charactersComplete;
    const alignments = this.alignments;
    this.alignments = [];
    return { bytes, alignments, charactersComplete };
  }
}

/** `text`'s characters spread evenly over [startMs, startMs + durationMs], in whole milliseconds that add up. */
function spread(text: string, startMs: number, durationMs: number): CharacterAlignment {
  const chars = [...text];
  const at = (i: number) => Math.round(startMs + (durationMs * i) / chars.length);
  return { chars, charStartTimesMs: chars.map((_, i) => at(i)), charDurationsMs: chars.map((_, i) => at(i + 1) - at(i)) };
}
