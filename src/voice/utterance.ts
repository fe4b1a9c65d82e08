/**
 * One utterance of the voice: streamed text in, paid speech out — a speech socket's stream (one per context)
 * or one talk cycle of a call (a greeting, an app reply). Text pieces go through the text splitter
 * (text-phrase-splitter.ts); each phrase's price is held (speech-bill.ts) before the phrase is queued on the
 * phrase speaker (phrase-speaker.ts); the owner pulls the encoded audio (`audio()`), says what of it was
 * delivered, and the utterance charges exactly that when it closes.
 *
 * Input: pieces are taken one after the other, in the order given (`take`, `flush`, `endInput`,
 * `closeInput`), so holds are placed in order and a close waits for the one being placed. When the balance
 * cannot cover the next phrase, the input ends there (the phrases already held are still spoken) and the
 * owner is told once (`onQuotaExhausted`).
 *
 * Lifecycle (primitives/session-lifecycle.ts): `close(reason)` stops it now — the phrase being synthesized is
 * cancelled, no more audio comes — then charges what was delivered and releases the rest of the hold. It is
 * idempotent; `interrupt()` is the same for a barge-in. An utterance whose audio has all been taken is closed
 * by its owner in the same way (`finished`).
 */
import type { EncoderSource } from '../codecs/encoders/speech-encoders.js';
import { InsufficientQuotaError } from '../billing/errors.js';
import type { ChargeContext, Ledger } from '../billing/ledger.js';
import type { EncodingVariant, SpeechFormat } from '../codecs/types.js';
import type { Logger } from '../observability/logger.js';
import { SessionLifecycle, type Session } from '../primitives/session-lifecycle.js';
import type { SliceSeconds } from './phrase-encoder.js';
import { PhraseSpeaker, type SpokenAudio } from './phrase-speaker.js';
import type { PhraseEngine, Voice } from './phrase-synthesis.js';
import { SpeechBill } from './speech-bill.js';
import { TextPhraseSplitter, type TextChunk } from './text-phrase-splitter.js';

/** Everything a voice needs to speak and be paid: the model, its voice and output, and whom to charge. */
export interface VoiceSetup {
  model: string;
  engine: PhraseEngine;
  voice: Voice;
  speakable: ReadonlySet<string> | null;
  format: SpeechFormat;
  /** The format at another rate (an ElevenLabs name such as pcm_22050); the format's own when absent. */
  variant?: EncodingVariant;
  /** Encoder slices (phrase-speaker.ts); a listener's default when absent. */
  slices?: SliceSeconds;
  /** The server's encoders; the process-wide ones when absent (tests). */
  encoders?: EncoderSource;
  ledger: Ledger;
  charge: ChargeContext;
  logger: Logger;
  /** What the speech is called in logs ('speech socket phrase', 'call speech'). */
  label: string;
}

export interface UtteranceEvents {
  /** The balance could not hold the next phrase: the input was ended there. */
  onQuotaExhausted?(err: InsufficientQuotaError): void;
}

export class Utterance implements Session {
  private readonly lifecycle = new SessionLifecycle();
  private readonly splitter = new TextPhraseSplitter();
  private readonly speaker: PhraseSpeaker;
  private readonly bill: SpeechBill;
  private input: Promise<void> = Promise.resolve(); // pieces being held and queued, one after the other
  private ended = false; // no more text is taken
  private exhausted = false;
  private over = false; // the audio has all been taken, or it was stopped
  private closing: Promise<void> | null = null;

  constructor(
    setup: VoiceSetup,
    private readonly events: UtteranceEvents = {},
  ) {
    const { engine, voice, format, variant, speakable, slices, charge } = setup;
    this.speaker = new PhraseSpeaker({
      engine,
      voice,
      format,
      ...(variant ? { variant } : {}),
      speakable,
      account: charge.accountId,
      signal: this.lifecycle.signal,
      ...(slices ? { slices } : {}),
      ...(setup.encoders ? { encoders: setup.encoders } : {}),
    });
    this.bill = new SpeechBill({ ledger: setup.ledger, charge, model: setup.model, logger: setup.logger, label: setup.label });
  }

  get closed(): boolean {
    return this.lifecycle.closed;
  }

  get signal(): AbortSignal {
    return this.lifecycle.signal;
  }

  /** No more text is taken (the input ended, it was closed, or the balance ran out). */
  get inputEnded(): boolean {
    return this.ended;
  }

  /** The balance could not hold a phrase: the input was ended by it. */
  get quotaExhausted(): boolean {
    return this.exhausted;
  }

  /** The audio stream is over (all taken, or stopped): nothing more is queued or held. */
  get finished(): boolean {
    return this.over || this.lifecycle.closed;
  }

  /** Phrases are queued, being synthesized or waiting to be taken: audio is owed. */
  get owesAudio(): boolean {
    return this.speaker.owesAudio;
  }

  /** Characters received and not yet synthesized: what the text limits count (voice-session.ts). */
  get waitingCharacters(): number {
    return this.splitter.pendingCharacters + this.speaker.unsynthesizedCharacters;
  }

  /** Characters whose audio was delivered: what the utterance is charged. */
  get deliveredCharacters(): number {
    return this.bill.deliveredCharacters;
  }

  /** Takes a piece of text: the phrases it completes are held and queued. */
  take(text: string): Promise<void> {
    return this.serially(async () => {
      if (this.finished || this.ended) return;
      await this.queue(this.splitter.push(text));
    });
  }

  /** Speaks what is pending now, as the end of a text (the next text's first phrase is short again). */
  flush(): Promise<void> {
    return this.serially(() => this.queue(this.splitter.flush()));
  }

  /** The input ended: everything received is spoken, then the audio ends. */
  endInput(): Promise<void> {
    return this.serially(async () => {
      if (this.ended || this.finished) return;
      this.ended = true;
      await this.queue(this.splitter.flush());
      this.speaker.end();
    });
  }

  /** The input is closed: what was flushed, or is already a certain phrase, is spoken; text still waiting for more is dropped, uncharged. */
  closeInput(): Promise<void> {
    return this.serially(async () => {
      if (this.ended || this.finished) return;
      this.ended = true;
      this.speaker.end();
    });
  }

  /**
   * The encoded audio, item by item; the owner reports what it delivered (`delivered`). Ends when the input
   * has ended and everything was spoken, or at close; throws a failure of synthesis or encoding.
   */
  async *audio(): AsyncGenerator<SpokenAudio> {
    try {
      yield* this.speaker;
    } finally {
      this.over = true;
    }
  }

  /** The audio of the first `characters` characters (SpokenAudio.charactersComplete) has been delivered. */
  delivered(characters: number): void {
    this.bill.deliver(characters);
  }

  /** Charges what was delivered and not yet charged now (a socket, phrase by phrase), rather than at close. */
  chargeDelivered(): Promise<void> {
    return this.bill.chargeDelivered();
  }

  /** Barge-in: stops now, as close('interrupted'). */
  interrupt(): Promise<void> {
    return this.close('interrupted');
  }

  /** Stops now (idempotent) and, once the hold being placed is in, charges what was delivered and releases the rest. */
  close(reason: string): Promise<void> {
    if (this.closing) return this.closing;
    // Set before the signal fires: a listener that closes again gets this same settlement.
    this.closing = (async () => {
      await this.input;
      await this.bill.close();
    })();
    this.lifecycle.close(reason);
    return this.closing;
  }

  private serially(task: () => Promise<void>): Promise<void> {
    const next = this.input.then(task);
    // The chain goes on after a failure; the caller sees it.
    this.input = next.catch(() => {});
    return next;
  }

  /** Holds each phrase's price, then queues it; ends the input when the balance cannot cover one. */
  private async queue(chunks: TextChunk[]): Promise<void> {
    for (const chunk of chunks) {
      if (this.finished) return;
      try {
        await this.bill.hold(chunk.characters);
      } catch (err) {
        if (!(err instanceof InsufficientQuotaError)) throw err;
        this.exhausted = true;
        this.events.onQuotaExhausted?.(err);
        this.ended = true;
        this.speaker.end();
        return;
      }
      if (this.finished) return;
      this.speaker.say(chunk);
    }
  }
}
