/**
 * The one phrase producer of speech: phrases (≤ 200 characters each, text-chunker.ts) are synthesized as one
 * short engine job each, in order, each acquiring a replica for that phrase alone — a phrase nobody is
 * waiting behind (the first, or the first after a pause) as an `opening` job, ahead of every continuation in
 * the engine's queue, the others as `continuation`s, all under the caller's account so the queue serves
 * accounts in turn. REST bodies get a whole planned text at once (synthesizePhrases); the speech sockets and
 * calls add phrases as their text arrives (phrase-speaker.ts).
 *
 * Synthesis runs ahead of the consumer (the encoder, pulled by the socket) into a bounded buffer: at most
 * `ahead` phrases synthesized and not yet taken. Then it waits, holding no replica. So per stream the server
 * holds at most the phrase being encoded plus `ahead` phrases of samples, whether the client reads fast,
 * slowly or not at all; a slow reader costs memory (bounded) and never a replica.
 *
 * Stopping (the consumer left, the client went, `signal` aborted) cancels the phrase job in flight, if any.
 * A failed phrase ends the production after the phrases before it were taken.
 */
import type { JobOptions } from '../engines/runtime/model-engine.js';
import type { PlannedPhrase } from '../engines/tts/phrase-plan.js';
import { AsyncQueue } from '../primitives/async-queue.js';
import { untilAborted } from '../primitives/until-aborted.js';
import type { PcmChunk } from './speech-stream.js';

/** Phrases synthesized ahead of the one the consumer holds. One keeps a fast reader's next phrase ready. */
export const PHRASES_AHEAD = 1;

/** What this needs of an engine (ModelEngine.run). */
export interface PhraseEngine {
  run<T>(method: string, input: unknown, signal?: AbortSignal, options?: JobOptions): Promise<T>;
}

export interface Voice {
  speaker?: number;
}

export interface SynthesisOptions {
  engine: PhraseEngine;
  voice: Voice;
  account: string;
  signal: AbortSignal;
  /** Phrases synthesized ahead of the one the consumer holds (PHRASES_AHEAD by default). */
  ahead?: number;
}

export type PhraseToSynthesize = PlannedPhrase;

export interface SynthesizedPhrase extends PhraseToSynthesize {
  samples: Float32Array;
  sampleRate: number;
}

export class PhraseSynthesizer {
  /** Phrases added and not yet begun; their size is their characters. Taking one puts it in flight. */
  private readonly pending = new AsyncQueue<PhraseToSynthesize>({ sizeOf: (p) => p.characters, onTake: (p) => (this.inFlight = p) });
  /** Synthesized phrases not yet taken: the producer pauses at `ahead` of them. Taking one ends the opening. */
  private readonly ready: AsyncQueue<SynthesizedPhrase>;
  private readonly controller = new AbortController();
  private inFlight: PhraseToSynthesize | null = null;
  private failed: { error: unknown; whileStopping: boolean } | null = null;
  private started = 0;
  private readonly production: Promise<void>;
  /** Nothing is being encoded or waiting (the consumer says so after a pause): the next job is an opening. */
  opening = true;
  private readonly unlink: () => void;

  constructor(private readonly options: SynthesisOptions) {
    const ahead = options.ahead ?? PHRASES_AHEAD;
    this.ready = new AsyncQueue({ highWater: ahead - 1, lowWater: ahead - 1, onTake: () => (this.opening = false) });
    // Stopped: no more phrases are taken in, and the consumer gets the phrases ready, then the end, without
    // waiting for the job in flight to be cancelled.
    this.controller.signal.addEventListener('abort', () => (this.pending.end(), this.ready.end()), { once: true });
    const stop = () => this.stop();
    if (options.signal.aborted) this.controller.abort();
    else options.signal.addEventListener('abort', stop, { once: true });
    this.unlink = () => options.signal.removeEventListener('abort', stop);
    this.production = this.produce();
  }

  /** Queues a phrase; ignored once production stopped (stopped, or a phrase failed). */
  add(phrase: PhraseToSynthesize): void {
    if (this.stopped) return;
    if (this.pending.ended) throw new Error('PhraseSynthesizer: add() after end()');
    this.pending.push(phrase);
  }

  /** No more phrases: production ends once the queued ones are synthesized. */
  end(): void {
    this.pending.end();
  }

  /** Cancels the job in flight and starts no more. */
  stop(): void {
    this.unlink();
    this.controller.abort();
  }

  /** The next synthesized phrase, once one is ready (taking it makes room for the next job); undefined at the end. */
  async next(): Promise<SynthesizedPhrase | undefined> {
    const result = await this.ready.next();
    return result.done ? undefined : result.value;
  }

  /** Stopped, or a phrase failed: nothing more will be synthesized. */
  get stopped(): boolean {
    return this.controller.signal.aborted || this.failed !== null;
  }

  /** Stopped from outside (the signal, or the consumer left): the stream is cancelled, not ended. */
  get cancelled(): boolean {
    return this.controller.signal.aborted;
  }

  /** The error of a failed phrase (not one that came from stopping), or null. */
  get failure(): { error: unknown } | null {
    return this.failed && !this.failed.whileStopping ? this.failed : null;
  }

  /** No more phrases will come: end() was called, or production stopped. */
  get allAdded(): boolean {
    return this.pending.ended;
  }

  /** Nothing queued and nothing being synthesized. */
  get caughtUp(): boolean {
    return !this.pending.length && !this.inFlight;
  }

  get hasReady(): boolean {
    return this.ready.length > 0;
  }

  /** Phrases queued, being synthesized or waiting to be taken. */
  get owed(): boolean {
    return this.pending.length > 0 || this.inFlight !== null || this.ready.length > 0;
  }

  /** Characters queued and not yet synthesized (the job in flight included). */
  get unsynthesizedCharacters(): number {
    return this.pending.size + (this.inFlight?.characters ?? 0);
  }

  /**
   * The synthesized phrases in order; ends when production does, throwing a phrase's failure (or the
   * cancelled job's error, when stopped during one). Leaving stops it.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<SynthesizedPhrase> {
    try {
      for await (const phrase of this.ready) yield phrase;
      await this.production;
      if (this.failed) throw this.failed.error;
    } finally {
      this.stop();
    }
  }

  private async produce(): Promise<void> {
    const { engine, voice, account } = this.options;
    const signal = this.controller.signal;
    try {
      // Leaving this loop (stopped, or a phrase failed) drops the phrases still queued.
      for await (const phrase of this.pending) {
        if (signal.aborted) return;
        const priority = this.opening ? 'opening' : 'continuation';
        const input = { text: phrase.text, spoken: phrase.spoken, boundaryAfter: phrase.boundaryAfter, index: this.started++, ...voice };
        const out = await engine.run<{ samples: Float32Array; sampleRate: number }>('synthesizePhrase', input, signal, { account, priority });
        this.inFlight = null;
        // No room for another until the consumer takes one; a stop ends the wait.
        if (!this.ready.push({ ...phrase, samples: out.samples, sampleRate: out.sampleRate })) await untilAborted(this.ready.drained(), signal);
      }
    } catch (error) {
      this.failed = { error, whileStopping: signal.aborted };
    } finally {
      this.inFlight = null;
      this.pending.end();
      this.ready.end();
    }
  }
}

/** A planned text (phrase-plan.ts) synthesized phrase by phrase, as PCM chunks for the REST encoder. */
export async function* synthesizePhrases(
  engine: PhraseEngine,
  phrases: PlannedPhrase[],
  voice: Voice,
  signal: AbortSignal,
  account: string,
): AsyncGenerator<PcmChunk> {
  const synthesizer = new PhraseSynthesizer({ engine, voice, account, signal });
  for (const phrase of phrases) synthesizer.add(phrase);
  synthesizer.end();
  for await (const phrase of synthesizer) yield { samples: phrase.samples, sampleRate: phrase.sampleRate, characters: phrase.characters };
}
