/**
 * One streaming speech socket: client messages → text splitter (pipeline/text-phrase-splitter.ts) → phrase
 * speaker (pipeline/phrase-speaker.ts) → audio messages, with the socket's limits and its bill.
 *
 * Order and flow: client messages are handled one after the other; phrases are spoken in order as one
 * audio stream; the next audio item is produced only once the previous message was taken by the transport
 * (and, past its high-water mark, drained), so a client that does not read stops synthesis (at most one
 * phrase ahead) instead of growing memory. After the last audio: `{"isFinal": true}`, then close 1000.
 *
 * Billing (README): one hold per socket, grown by each phrase's price before the phrase is queued. Each phrase
 * is charged as soon as its audio has been handed to the transport IN FULL and written to the network (the
 * peer's flush): its usage row lands then, while the socket stays open, and the hold shrinks by as much
 * (Reservation.settlePart). So a crash loses at most the phrase in flight, and never charges audio that had
 * not left the process. When the socket ends, however it ends, the rest of the hold is released. A phrase cut
 * off by a disconnect is not charged (unlike the REST path's pro-rata share: a socket's phrases are short, and
 * what the listener heard of a cut phrase is not a unit of text). Text with nothing to say is charged with the
 * next phrase, trailing whitespace or punctuation with nothing after it is free. When the balance cannot cover
 * the next phrase: an `insufficient_quota` error, no more input, the phrases already held are spoken, then
 * `isFinal` and close 1008.
 *
 * Errors: a bad message (not JSON, a field of the wrong type, text the voice cannot say, too long, too much
 * text waiting) gets an error message and the socket goes on; a server failure closes 1011, inactivity 1008.
 */
import type { Logger } from '../../observability/logger.js';
import type { Ledger, Reservation, ChargeContext } from '../../billing/ledger.js';
import { InsufficientQuotaError } from '../../billing/errors.js';
import { KeyRevokedError } from '../../store/store-errors.js';
import type { SpeechFormat } from '../../codecs/types.js';
import { describeChar, speechText } from '../../engines/tts/speech-text.js';
import { PhraseSpeaker } from '../../pipeline/phrase-speaker.js';
import type { PhraseEngine, Voice } from '../../pipeline/phrase-synthesis.js';
import { TextPhraseSplitter, type TextChunk } from '../../pipeline/text-phrase-splitter.js';
import { ApiError, isCapacityRefusal, toApiError } from '../errors.js';
import type { DuplexHandler, DuplexPeer } from '../types.js';
import { audioMessage, errorMessage, finalMessage, parseClientMessage } from './speech-socket-messages.js';

/** Longest text of one message, in characters. */
export const MAX_MESSAGE_CHARACTERS = 10_000;
/** Text received and not yet synthesized, in characters (several minutes of speech): more is refused until audio catches up. */
export const MAX_PENDING_CHARACTERS = 5_000;

export interface SpeechSocketSetup {
  model: string;
  engine: PhraseEngine;
  format: SpeechFormat;
  voice: Voice;
  speakable: ReadonlySet<string> | null;
  charge: ChargeContext;
  /** No client message and no audio for this long ends the socket. */
  inactivityMs: number;
}

export interface SpeechSocketDeps {
  ledger: Ledger;
  logger: Logger;
}

export class SpeechSocket implements DuplexHandler {
  private readonly splitter = new TextPhraseSplitter();
  private readonly speaker: PhraseSpeaker;
  private readonly stop = new AbortController();
  private work: Promise<void> = Promise.resolve(); // client messages, one after the other
  private reservation: Reservation | null = null;
  private charged = 0; // characters of the phrases charged: their audio was taken in full and flushed
  private firstMessage = true;
  private inputEnded = false;
  private finished = false; // the audio stream is over: nothing more is queued or held
  private closeWith: { code: number; reason: string } = { code: 1000, reason: 'done' };
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: SpeechSocketDeps,
    private readonly setup: SpeechSocketSetup,
    private readonly peer: DuplexPeer,
  ) {
    const abort = () => this.stop.abort();
    if (peer.signal.aborted) abort();
    else peer.signal.addEventListener('abort', abort, { once: true });
    const { engine, voice, format, speakable, charge } = setup;
    this.speaker = new PhraseSpeaker({ engine, voice, format, speakable, account: charge.accountId, signal: this.stop.signal });
    this.armTimer();
    void this.pump();
  }

  onText(frame: string): void {
    this.armTimer();
    this.enqueue(() => this.handle(frame));
  }

  onBinary(): void {
    this.armTimer();
    this.enqueue(async () => this.sendError(new ApiError('invalid_value', 'Binary frames are not accepted: send JSON text messages such as {"text":"i ni ce "}.')));
  }

  onClose(): void {
    clearTimeout(this.timer);
    this.stop.abort();
  }

  /** The server is stopping: what was received is spoken, as if the input had ended. */
  onShutdown(): void {
    this.enqueue(() => this.endInput());
  }

  /**
   * The socket's key was revoked: an error message, then close 1008 `key_revoked` at once; the phrase being
   * synthesized is cancelled, and nothing is charged after the revocation (the settlement is refused).
   */
  onKeyRevoked(): void {
    if (this.stop.signal.aborted) return;
    this.sendError(new ApiError('invalid_api_key', 'The API key of this socket has been revoked: the socket is closed.'), 1008, 'key_revoked');
    this.stop.abort();
    this.peer.close(1008, 'key_revoked');
  }

  private enqueue(task: () => Promise<void>): void {
    this.work = this.work.then(task).catch((err) => this.fail(err));
  }

  private async handle(frame: string): Promise<void> {
    if (this.finished || this.stop.signal.aborted) return;
    // After an insufficient_quota error (already sent, the socket closing) more text is ignored without more errors.
    if (this.inputEnded && this.closeWith.code !== 1000) return;
    if (this.inputEnded) return this.sendError(new ApiError('invalid_request', 'The input has ended ({"text": ""} was received): no more text is taken on this socket.'));
    let message;
    try {
      message = parseClientMessage(frame);
    } catch (err) {
      return this.sendError(toApiError(err));
    }
    let text = message.text;
    // ElevenLabs clients open with {"text": " "} (and their settings): a greeting, not input.
    if (this.firstMessage && text && !text.trim()) text = undefined;
    this.firstMessage = false;
    if (text === '') return this.endInput();
    if (text) {
      const refusal = this.refusal(text);
      if (refusal) return this.sendError(refusal);
      await this.queue(this.splitter.push(text));
    }
    if (message.flush) await this.queue(this.splitter.flush());
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

  private async endInput(): Promise<void> {
    if (this.inputEnded || this.finished) return;
    this.inputEnded = true;
    await this.queue(this.splitter.flush());
    this.speaker.end();
  }

  /** Holds each phrase's price, then queues it; stops the input when the balance cannot cover one. */
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
        this.closeWith = { code: 1008, reason: 'insufficient_quota' };
        this.sendError(toApiError(err), 1008);
        this.inputEnded = true;
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
    try {
      for await (const item of this.speaker) {
        if (item.bytes.length || item.alignments.length) {
          const outcome = this.peer.sendText(audioMessage(item.bytes, item.alignments));
          if (outcome === 'closed') break;
          this.armTimer();
          if (item.charactersComplete > this.charged) {
            if (!(await this.chargeWhenFlushed(item.charactersComplete))) break;
          } else if (outcome === 'backpressure') await this.peer.drained();
        } else if (item.charactersComplete > this.charged) {
          // Its earlier messages held all of its audio.
          if (!(await this.chargeWhenFlushed(item.charactersComplete))) break;
        }
      }
      if (!this.stop.signal.aborted) {
        this.peer.sendText(finalMessage());
        this.peer.close(this.closeWith.code, this.closeWith.reason);
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.finished = true;
      clearTimeout(this.timer);
      this.stop.abort();
      await this.work; // a message being handled may be placing a hold: release after it
      // Every delivered phrase is charged already: what is still held is for phrases never delivered.
      await this.reservation?.release().catch((err: Error) => this.deps.logger.error({ requestId: this.peer.requestId, err: err.message }, 'releasing the speech socket hold failed'));
    }
  }

  /**
   * Charges the phrases completed up to `characters` once everything sent so far has been written to the
   * network; false (nothing charged) when the socket closed first. The pump waits for this, so at most one
   * phrase is ever delivered and not yet charged.
   */
  private async chargeWhenFlushed(characters: number): Promise<boolean> {
    if (!(await this.peer.flushed())) return false;
    const quantity = characters - this.charged;
    this.charged = characters;
    try {
      await this.reservation!.settlePart([{ model: this.setup.model, kind: 'speech', unit: 'character', quantity }]);
    } catch (err) {
      // The key was revoked before this phrase was charged: by design nothing more is charged to it.
      if (err instanceof KeyRevokedError) this.deps.logger.info({ requestId: this.peer.requestId, keyId: err.keyId }, 'speech socket phrase not charged: the key was revoked');
      else this.deps.logger.error({ requestId: this.peer.requestId, err: (err as Error).message }, 'recording speech socket usage failed: delivered, not charged');
    }
    return true;
  }

  /** A failure of the server's own (synthesis, encoding, store): logged, then close 1011 with a safe message. */
  private fail(err: unknown): void {
    if (this.stop.signal.aborted) return;
    const apiError = toApiError(err);
    const code = apiError.status === 503 ? 1013 : 1011;
    // A model at capacity (1013, try again later) is load, not a fault: warn, never error.
    if (isCapacityRefusal(err)) this.deps.logger.warn({ requestId: this.peer.requestId, err: (err as Error).message }, 'speech socket refused: model at capacity');
    else if (apiError.status >= 500) this.deps.logger.error({ requestId: this.peer.requestId, err: (err as Error)?.message }, 'speech socket failed');
    this.sendError(apiError, code);
    this.stop.abort();
    this.peer.close(code, apiError.code);
  }

  private sendError(err: ApiError, closeCode: number | null = null, code?: string): void {
    this.peer.sendText(errorMessage(err, closeCode, code));
  }

  /**
   * Inactivity: nothing from the client and no audio to send for `inactivityMs`. Audio still owed (phrases
   * waiting for a busy model, or the input ended and its last phrases not yet spoken) is not inactivity:
   * at real model size a burst of sockets can queue a phrase for longer than the timeout.
   */
  private armTimer(): void {
    clearTimeout(this.timer);
    if (this.finished) return;
    this.timer = setTimeout(() => {
      if (this.inputEnded || this.speaker.owesAudio) return this.armTimer();
      const seconds = this.setup.inactivityMs / 1000;
      const err = new ApiError('invalid_request', `No message for ${seconds} s while nothing was being spoken: the socket is closed. Send {"text": ""} to end the input when you are done.`);
      this.peer.sendText(errorMessage(err, 1008, 'input_timeout_exceeded'));
      this.stop.abort();
      this.peer.close(1008, 'input_timeout_exceeded');
    }, this.setup.inactivityMs);
    this.timer.unref();
  }
}
