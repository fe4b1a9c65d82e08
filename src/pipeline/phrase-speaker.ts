/**
 * Speaks phrases that arrive over time (a text stream, text-phrase-splitter.ts) as ONE continuous encoded
 * audio stream: phrases are queued with `say()`, synthesized one short engine job each (as the REST path's
 * phrase-synthesis.ts does), in order, and encoded by one encoder for the whole stream, so that a container
 * format (wav, ogg/opus, mp3, fmp4) stays a single valid stream however the text was split.
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
import { createEncoder } from '../codecs/encoders/index.js';
import type { EncoderSource } from '../codecs/encoders/speech-encoders.js';
import type { EncodingVariant, SpeechFormat, StreamingEncoder } from '../codecs/types.js';
import { speechText } from '../engines/tts/speech-text.js';
import type { TextChunk } from '../engines/tts/text-chunker.js';
import type { PhraseEngine, Voice } from './phrase-synthesis.js';
import { encoderLagSamples, SLICE_SECONDS_FIRST, SLICE_SECONDS_MAX } from './speech-stream.js';

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
  slices?: { first: number; max: number };
  /** The server's encoders; absent = the process-wide ones (tests). */
  encoders?: EncoderSource;
}

interface Queued {
  text: string;
  spoken: string;
  characters: number;
}

interface Synthesized extends Queued {
  samples: Float32Array;
  sampleRate: number;
}

export class PhraseSpeaker implements AsyncIterable<SpokenAudio> {
  private readonly queue: Queued[] = [];
  private readonly ready: Synthesized[] = [];
  private readonly controller = new AbortController();
  private carried = 0; // characters of phrases with nothing to say, charged with the next spoken one
  private inFlight: Queued | null = null;
  private ended = false;
  private failure: { error: unknown } | null = null;
  private idle = true; // nothing being encoded or waiting: the next phrase is an opening
  private phrasesStarted = 0;
  private wakeConsumer: (() => void) | null = null;
  private wakeProducer: (() => void) | null = null;

  constructor(private readonly options: SpeakerOptions) {
    const stop = () => this.controller.abort();
    if (options.signal.aborted) stop();
    else options.signal.addEventListener('abort', stop, { once: true });
    this.controller.signal.addEventListener('abort', () => this.wake(), { once: true });
    void this.produce();
  }

  /** Queues a phrase. A phrase with nothing to say is not synthesized: its characters go with the next one. */
  say(chunk: TextChunk): void {
    // Stopped (aborted, or a phrase failed): nothing more will be spoken, and the stream reports why.
    if (this.controller.signal.aborted || this.failure) return;
    if (this.ended) throw new Error('PhraseSpeaker: say() after end()');
    const spoken = this.options.speakable ? speechText(chunk.text, this.options.speakable).text : chunk.text;
    if (!spoken) {
      this.carried += chunk.characters;
      return;
    }
    this.queue.push({ text: chunk.text, spoken, characters: chunk.characters + this.carried });
    this.carried = 0;
    this.wake();
  }

  /** No more phrases: once the queued ones are spoken the encoder is flushed and the stream ends. */
  end(): void {
    this.ended = true;
    this.wake();
  }

  /** Whether phrases are queued, being synthesized or waiting to be read: audio is owed. */
  get owesAudio(): boolean {
    return this.queue.length > 0 || this.inFlight !== null || this.ready.length > 0;
  }

  /** Characters queued and not yet synthesized (the job in flight included). */
  get unsynthesizedCharacters(): number {
    return this.queue.reduce((n, q) => n + q.characters, this.inFlight?.characters ?? 0) + this.carried;
  }

  private wake(): void {
    const c = this.wakeConsumer;
    const p = this.wakeProducer;
    this.wakeConsumer = this.wakeProducer = null;
    c?.();
    p?.();
  }

  private sleep(which: 'consumer' | 'producer'): Promise<void> {
    return new Promise((resolve) => (which === 'consumer' ? (this.wakeConsumer = resolve) : (this.wakeProducer = resolve)));
  }

  private async produce(): Promise<void> {
    const { engine, voice, account } = this.options;
    const signal = this.controller.signal;
    try {
      for (;;) {
        while (!signal.aborted && (this.ready.length >= (this.options.ahead ?? 1) || (!this.queue.length && !this.ended))) await this.sleep('producer');
        const phrase = this.queue.shift();
        if (signal.aborted || !phrase) return;
        this.inFlight = phrase;
        // A phrase nobody is waiting behind (the first, or the first after a pause) is an opening job.
        const priority = this.idle ? 'opening' : 'continuation';
        const input = { text: phrase.text, spoken: phrase.spoken, boundaryAfter: true, index: this.phrasesStarted++, ...voice };
        const out = await engine.run<{ samples: Float32Array; sampleRate: number }>('synthesizePhrase', input, signal, { account, priority });
        this.inFlight = null;
        this.ready.push({ ...phrase, samples: out.samples, sampleRate: out.sampleRate });
        this.wake();
      }
    } catch (error) {
      if (!signal.aborted) this.failure = { error };
    } finally {
      this.inFlight = null;
      this.ended = true;
      this.queue.length = 0;
      this.wake();
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<SpokenAudio> {
    const stream = new EncodedStream(this.options, this.options.slices ?? { first: SLICE_SECONDS_FIRST, max: SLICE_SECONDS_MAX });
    try {
      for (;;) {
        const next = this.ready.shift();
        if (next) {
          this.idle = false;
          this.wake(); // room for the next phrase: synthesize it while this one is encoded and sent
          yield* stream.phrase(next);
          continue;
        }
        if (this.failure || this.controller.signal.aborted) break;
        const caughtUp = !this.queue.length && !this.inFlight;
        if (caughtUp && this.ended) break;
        if (caughtUp && !this.idle) {
          // Everything said so far is encoded and no text waits: let the last words leave now, not with the next text.
          yield* stream.drain();
          this.idle = true;
          // Look again: while the drained audio was being taken, more text or the end may have come, and their
          // wake() found no consumer asleep. Only a check with no await before the sleep below is safe.
          continue;
        }
        if (this.ready.length || this.failure || this.controller.signal.aborted) continue;
        await this.sleep('consumer');
      }
      // A failed phrase ends the stream after the audio before it, which leaves first.
      if (!this.controller.signal.aborted) yield* stream.finish();
      if (this.failure) throw this.failure.error;
    } finally {
      stream.close();
      this.controller.abort();
    }
  }
}

/** One encoder over the whole stream, its clock (input samples pushed), and the phrases it has taken. */
class EncodedStream {
  private encoder: StreamingEncoder | null = null;
  private rate = 0;
  private lag = 0;
  private pushed = 0;
  private sliceSeconds: number;
  private readonly ends: Array<{ end: number; characters: number }> = []; // phrase ends on the clock, cumulative characters
  private complete = 0;
  private alignments: PhraseAlignment[] = [];
  private reported = 0; // charactersComplete of the last item

  constructor(
    /** The format, its variant, and whose speech this is (the encoder pool shares its turns fairly between accounts). */
    private readonly output: Pick<SpeakerOptions, 'format' | 'variant' | 'account' | 'encoders'>,
    private readonly slices: { first: number; max: number },
  ) {
    this.sliceSeconds = slices.first;
  }

  async *phrase(p: Synthesized): AsyncGenerator<SpokenAudio> {
    if (!this.encoder) {
      const { format, variant, account, encoders } = this.output;
      this.encoder = await createEncoder(format, { inputRate: p.sampleRate, account, ...(variant ? { variant } : {}) }, encoders);
      this.rate = p.sampleRate;
      this.lag = encoderLagSamples(this.encoder.info, p.sampleRate);
    }
    const startMs = (this.pushed / this.rate) * 1000;
    const durationMs = (p.samples.length / this.rate) * 1000;
    // The phrase ends with the voice's word boundary (a pause): a space after its characters.
    this.alignments.push({ text: spread(`${p.text} `, startMs, durationMs), spoken: spread(`${p.spoken} `, startMs, durationMs) });
    const before = this.ends.length ? this.ends[this.ends.length - 1]!.characters : 0;
    this.ends.push({ end: this.pushed + p.samples.length, characters: before + p.characters });
    for (let offset = 0; offset < p.samples.length; ) {
      const slice = Math.max(1, Math.round(this.rate * this.sliceSeconds));
      this.sliceSeconds = Math.min(this.slices.max, this.sliceSeconds * 2);
      const bytes = await this.push(p.samples.subarray(offset, offset + slice));
      offset += slice;
      if (bytes.length) yield this.item(bytes, this.pushed - this.lag);
    }
  }

  /** Pushes the encoder's lookahead as silence, so every sample of the phrases taken so far is in its output. */
  async *drain(): AsyncGenerator<SpokenAudio> {
    if (!this.encoder) return;
    const covered = this.pushed;
    const bytes = await this.push(new Float32Array(this.lag));
    // The next phrase is a first audio again: short first slice.
    this.sliceSeconds = this.slices.first;
    const reportedBefore = this.reported;
    const item = this.item(bytes, covered);
    if (bytes.length || item.alignments.length || item.charactersComplete > reportedBefore) yield item;
  }

  /** Ends the encoded stream (the codec's last frame, a container's end). */
  async *finish(): AsyncGenerator<SpokenAudio> {
    if (!this.encoder) return;
    const bytes = await this.encoder.flush();
    yield this.item(bytes, Number.POSITIVE_INFINITY);
  }

  close(): void {
    this.encoder?.close();
  }

  private async push(samples: Float32Array): Promise<Uint8Array> {
    const bytes = await this.encoder!.push(samples);
    this.pushed += samples.length;
    return bytes;
  }

  private item(bytes: Uint8Array, covered: number): SpokenAudio {
    while (this.complete < this.ends.length && this.ends[this.complete]!.end <= covered) this.complete++;
    const charactersComplete = this.complete ? this.ends[this.complete - 1]!.characters : 0;
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
