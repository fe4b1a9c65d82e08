/**
 * One spoken stream of a speech socket, with its bill: text pieces → text splitter
 * (pipeline/text-phrase-splitter.ts) → phrase speaker (pipeline/phrase-speaker.ts) → audio messages. The
 * single-stream socket (speech-socket.ts) has one; the multi-context socket (multi-context-socket.ts) one
 * per `context_id`, whose messages then carry `contextId`.
 *
 * Order and flow: pieces are taken one after the other (the owner serializes its client's messages);
 * phrases are spoken in order as one audio stream; the next audio item is produced only once the previous
 * message was taken by the transport (and, past its high-water mark, drained), so a client that does not
 * read stops synthesis (at most one phrase ahead) instead of growing memory. After the last audio: a final
 * message (`{"isFinal": true}`, with `contextId` when the stream has one).
 *
 * Billing (README): one hold per stream, grown by each phrase's price before the phrase is queued. Each
 * phrase is charged as soon as its audio has been handed to the transport IN FULL and written to the network
 * (the peer's flush): its usage row lands then, and the hold shrinks by as much (Reservation.settlePart). So
 * a crash loses at most the phrase in flight, and never charges audio that had not left the process. When
 * the stream ends, however it ends, the rest of the hold is released. A phrase cut off by a disconnect is not
 * charged. Text with nothing to say is charged with the next phrase; trailing whitespace or punctuation with
 * nothing after it is free. When the balance cannot cover the next phrase: an `insufficient_quota` error, no
 * more input, the phrases already held are spoken, then the final message.
 */
import type { Logger } from '../../observability/logger.js';
import type { Ledger, Reservation, ChargeContext } from '../../billing/ledger.js';
import { InsufficientQuotaError } from '../../billing/errors.js';
import { KeyRevokedError } from '../../store/store-errors.js';
import type { EncodingVariant, SpeechFormat } from '../../codecs/types.js';
import { describeChar, speechText } from '../../engines/tts/speech-text.js';
import { PhraseSpeaker } from '../../pipeline/phrase-speaker.js';
import type { PhraseEngine, Voice } from '../../pipeline/phrase-synthesis.js';
import { TextPhraseSplitter, type TextChunk } from '../../pipeline/text-phrase-splitter.js';
import { ApiError, toApiError } from '../errors.js';
import type { DuplexPeer } from '../../duplex/duplex-contract.js';
import { audioMessage, errorMessage, finalMessage } from './speech-socket-messages.js';

/** Longest text of one message, in characters. */
export const MAX_MESSAGE_CHARACTERS = 10_000;
/** Text received and not yet synthesized, in characters (several minutes of speech): more is refused until audio catches up. */
export const MAX_PENDING_CHARACTERS = 5_000;

export interface SpeechSocketSetup {
  model: string;
  engine: PhraseEngine;
  format: SpeechFormat;
  /** The format at another rate (an ElevenLabs name such as pcm_22050); the format's own when absent. */
  variant?: EncodingVariant;
  voice: Voice;
  speakable: ReadonlySet<string> | null;
  charge: ChargeContext;
  /** No client message and no audio for this long ends the socket (a context of the multi-context socket). */
  inactivityMs: number;
}

export interface SpeechSocketDeps {
  ledger: Ledger;
  logger: Logger;
}

/** What a stream tells the socket that owns it. */
export interface SpeechContextOwner {
  readonly peer: DuplexPeer;
  /** The close code an `insufficient_quota` error announces: the socket's, or null when only this stream ends. */
  readonly quotaCloseCode: number | null;
  /** Audio went out: the inactivity clocks restart. */
  onAudio(): void;
  /** The final message was sent (not after an abort); `exhausted` when the balance ended the input. */
  onFinal(exhausted: boolean): void;
  /** A failure of the server's own (synthesis, encoding, store): the owner closes the socket. */
  onFailure(err: unknown): void;
}

export class SpeechContext {
  private readonly splitter = new TextPhraseSplitter();
  private readonly speaker: PhraseSpeaker;
  private readonly stop = new AbortController();
  private work: Promise<void> = Promise.resolve(); // holds being placed, one after the other
  private reservation: Reservation | null = null;
  private charged = 0; // characters of the phrases charged: their audio was taken in full and flushed
  private exhausted = false;
  private ended = false; // no more text is taken
  private finished = false; // the audio stream is over: nothing more is queued or held
  /** Resolves once the stream is over and its hold released, however it ended. */
  readonly done: Promise<void>;

  constructor(
    private readonly deps: SpeechSocketDeps,
    private readonly setup: SpeechSocketSetup,
    private readonly owner: SpeechContextOwner,
    /** Set on the multi-context socket: every message of this stream carries it as `contextId`. */
    readonly contextId?: string,
  ) {
    const { engine, voice, format, variant, speakable, charge } = setup;
    this.speaker = new PhraseSpeaker({ engine, voice, format, ...(variant ? { variant } : {}), speakable, account: charge.accountId, signal: this.stop.signal });
    this.done = this.pump();
  }

  /** No more text is taken (the input ended, it was closed, or the balance ran out). */
  get inputEnded(): boolean {
    return this.ended;
  }

  /** The balance could not hold a phrase: the input was ended by it. */
  get quotaExhausted(): boolean {
    return this.exhausted;
  }

  /** Phrases are queued, being synthesized or waiting to be sent: audio is owed. */
  get owesAudio(): boolean {
    return this.speaker.owesAudio;
  }

  /** Takes a piece of text (refused whole with an error message when it cannot be taken), then flushes if asked. */
  take(text: string | undefined, flush: boolean): Promise<void> {
    return this.serially(async () => {
      if (this.finished || this.ended) return;
      if (text) {
        const refusal = this.refusal(text);
        if (refusal) return this.sendError(refusal);
        await this.queue(this.splitter.push(text));
      }
      if (flush) await this.queue(this.splitter.flush());
    });
  }

  /** The input ended: everything received is spoken, then the final message. */
  end(): Promise<void> {
    return this.serially(async () => {
      if (this.ended || this.finished) return;
      this.ended = true;
      await this.queue(this.splitter.flush());
      this.speaker.end();
    });
  }

  /**
   * Closed (ElevenLabs' `close_context`): what was flushed, or is already a certain phrase, is spoken; text
   * still waiting for more (never flushed) is dropped, uncharged. Then the final message.
   */
  close(): Promise<void> {
    return this.serially(async () => {
      if (this.ended || this.finished) return;
      this.ended = true;
      this.speaker.end();
    });
  }

  /** Stops now: the phrase being synthesized is cancelled, no final message; the hold is released. */
  abort(): void {
    this.stop.abort();
  }

  /** Sends an error message of this stream (with its `contextId`). */
  sendError(err: ApiError, closeCode: number | null = null, code?: string): void {
    this.owner.peer.sendText(errorMessage(err, closeCode, code, this.contextId));
  }

  private serially(task: () => Promise<void>): Promise<void> {
    const next = this.work.then(task);
    // The chain goes on after a failure; the caller sees it (and the owner closes the socket).
    this.work = next.catch(() => {});
    return next;
  }

  /** Why a piece of text is refused whole (nothing of it is kept), or null. */
  private refusal(text: string): ApiError | null {
    const length = [...text].length;
    if (length > MAX_MESSAGE_CHARACTERS) {
      return new ApiError('invalid_value', `text: at most ${MAX_MESSAGE_CHARACTERS} characters per message (got ${length}); send the text in smaller pieces.`, { param: 'text' });
    }
    const pending = this.splitter.pendingCharacters + this.speaker.unsynthesizedCharacters;
    if (pending + length > MAX_PENDING_CHARACTERS) {
      return new ApiError('invalid_value', `text: ${pending} characters are waiting to be spoken and at most ${MAX_PENDING_CHARACTERS} may wait; send this piece again once more audio has arrived.`, { param: 'text' });
    }
    if (this.setup.speakable) {
      const { unspeakable } = speechText(text, this.setup.speakable);
      if (unspeakable.length) {
        return new ApiError('invalid_value', `text: ${this.setup.model} cannot pronounce ${unspeakable.slice(0, 8).map(describeChar).join(', ')}; this piece was not spoken, send it again without them.`, { param: 'text' });
      }
    }
    return null;
  }

  /** Holds each phrase's price, then queues it; ends the input when the balance cannot cover one. */
  private async queue(chunks: TextChunk[]): Promise<void> {
    for (const chunk of chunks) {
      if (this.finished) return;
      try {
        this.reservation ??= await this.deps.ledger.reserve(this.setup.charge, 0);
        const price = this.deps.ledger.priceOf('character', 'speech');
        // growBy, not a running total: delivered phrases have already left the hold (settlePart).
        await this.reservation.growBy(this.deps.ledger.costOf(chunk.characters, price));
      } catch (err) {
        if (!(err instanceof InsufficientQuotaError)) throw err;
        this.exhausted = true;
        this.sendError(toApiError(err), this.owner.quotaCloseCode);
        this.ended = true;
        this.speaker.end();
        return;
      }
      if (this.finished) return;
      this.speaker.say(chunk);
    }
  }

  /**
   * Sends the audio as it is encoded, one message at a time, waiting for the transport to drain. A message
   * that completes phrases is followed by their charge, once the transport has written it to the network.
   */
  private async pump(): Promise<void> {
    const { peer } = this.owner;
    const abort = () => this.stop.abort();
    if (peer.signal.aborted) abort();
    else peer.signal.addEventListener('abort', abort, { once: true });
    try {
      for await (const item of this.speaker) {
        if (item.bytes.length || item.alignments.length) {
          const outcome = peer.sendText(audioMessage(item.bytes, item.alignments, this.contextId));
          if (outcome === 'closed') break;
          this.owner.onAudio();
          if (item.charactersComplete > this.charged) {
            if (!(await this.chargeWhenFlushed(item.charactersComplete))) break;
          } else if (outcome === 'backpressure') await peer.drained();
        } else if (item.charactersComplete > this.charged) {
          // Its earlier messages held all of its audio.
          if (!(await this.chargeWhenFlushed(item.charactersComplete))) break;
        }
      }
      if (!this.stop.signal.aborted) {
        this.finished = true;
        peer.sendText(finalMessage(this.contextId));
        this.owner.onFinal(this.exhausted);
      }
    } catch (err) {
      if (!this.stop.signal.aborted) this.owner.onFailure(err);
    } finally {
      this.finished = true;
      peer.signal.removeEventListener('abort', abort);
      this.stop.abort();
      await this.work; // a piece being taken may be placing a hold: release after it
      // Every delivered phrase is charged already: what is still held is for phrases never delivered.
      await this.reservation?.release().catch((err: Error) => this.deps.logger.error({ requestId: peer.requestId, err: err.message }, 'releasing the speech socket hold failed'));
    }
  }

  /**
   * Charges the phrases completed up to `characters` once everything sent so far has been written to the
   * network; false (nothing charged) when the socket closed first. The pump waits for this, so at most one
   * phrase is ever delivered and not yet charged.
   */
  private async chargeWhenFlushed(characters: number): Promise<boolean> {
    const { peer } = this.owner;
    if (!(await peer.flushed())) return false;
    const quantity = characters - this.charged;
    this.charged = characters;
    try {
      await this.reservation!.settlePart([{ model: this.setup.model, kind: 'speech', unit: 'character', quantity }]);
    } catch (err) {
      // The key was revoked before this phrase was charged: by design nothing more is charged to it.
      if (err instanceof KeyRevokedError) this.deps.logger.info({ requestId: peer.requestId, keyId: err.keyId }, 'speech socket phrase not charged: the key was revoked');
      else this.deps.logger.error({ requestId: peer.requestId, err: (err as Error).message }, 'recording speech socket usage failed: delivered, not charged');
    }
    return true;
  }
}
