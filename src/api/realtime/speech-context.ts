/**
 * One spoken stream of a speech socket: the adapter between its client messages and the voice core
 * (src/voice/), which does the speaking and the billing — text splitter, phrase speaker, the hold grown per
 * phrase, the text limits and the charge of the characters delivered. The single-stream socket
 * (speech-socket.ts) has one; the multi-context socket (multi-context-socket.ts) one per `context_id`, whose
 * messages then carry `contextId`. This file turns refusals into error messages, the audio into audio
 * messages, and says when a phrase counts as delivered.
 *
 * Order and flow: pieces are taken one after the other (the owner serializes its client's messages);
 * phrases are spoken in order as one audio stream; the next audio item is produced only once the previous
 * message was taken by the transport (and, past its high-water mark, drained), so a client that does not
 * read stops synthesis (at most one phrase ahead) instead of growing memory. After the last audio: a final
 * message (`{"isFinal": true}`, with `contextId` when the stream has one).
 *
 * Billing (README; voice/speech-bill.ts): one hold per stream, grown by each phrase's price before the phrase
 * is queued. A phrase counts as delivered once its audio has been handed to the transport IN FULL and written
 * to the network (the peer's flush), and is charged then (its usage row lands, the hold shrinks by as much).
 * So a crash loses at most the phrase in flight, and never charges audio that had not left the process. When
 * the stream ends, however it ends, the rest of the hold is released. A phrase cut off by a disconnect is not
 * charged. When the balance cannot cover the next phrase: an `insufficient_quota` error, no more input, the
 * phrases already held are spoken, then the final message.
 */
import type { CloseCode } from '../../duplex/close-codes.js';
import type { EncoderSource } from '../../codecs/encoders/speech-encoders.js';
import type { Logger } from '../../observability/logger.js';
import type { Ledger, ChargeContext } from '../../billing/ledger.js';
import type { EncodingVariant, SpeechFormat } from '../../codecs/types.js';
import { describeChar, speechText } from '../../engines/tts/speech-text.js';
import type { Session } from '../../primitives/session-lifecycle.js';
import type { PhraseEngine, Voice } from '../../voice/phrase-synthesis.js';
import type { Utterance } from '../../voice/utterance.js';
import { SpeechLimitError } from '../../voice/voice-session.js';
import { VoiceSession } from '../../voice/voice-session.js';
import { ApiError, toApiError } from '../errors.js';
import type { DuplexPeer } from '../../duplex/duplex-contract.js';
import { audioMessage, errorMessage, finalMessage } from './speech-socket-messages.js';

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
  encoders: EncoderSource;
}

/** What a stream tells the socket that owns it. */
export interface SpeechContextOwner {
  readonly peer: DuplexPeer;
  /** The close code an `insufficient_quota` error announces: the socket's, or null when only this stream ends. */
  readonly quotaCloseCode: CloseCode | null;
  /** Audio went out: the inactivity clocks restart. */
  onAudio(): void;
  /** The final message was sent (not after a close); `exhausted` when the balance ended the input. */
  onFinal(exhausted: boolean): void;
  /** A failure of the server's own (synthesis, encoding, store): the owner closes the socket. */
  onFailure(err: unknown): void;
}

export class SpeechContext implements Session {
  private readonly voice: VoiceSession;
  private readonly utterance: Utterance;
  private work: Promise<void> = Promise.resolve(); // the client's pieces, one after the other
  /** Resolves once the stream is over and its hold released, however it ended. */
  readonly done: Promise<void>;

  constructor(
    deps: SpeechSocketDeps,
    private readonly setup: SpeechSocketSetup,
    private readonly owner: SpeechContextOwner,
    /** Set on the multi-context socket: every message of this stream carries it as `contextId`. */
    readonly contextId?: string,
  ) {
    const { model, engine, voice, format, variant, speakable, charge } = setup;
    this.voice = new VoiceSession({
      model,
      engine,
      voice,
      format,
      ...(variant ? { variant } : {}),
      speakable,
      encoders: deps.encoders,
      ledger: deps.ledger,
      charge,
      logger: deps.logger,
      label: 'speech socket phrase',
    });
    this.utterance = this.voice.open({ onQuotaExhausted: (err) => this.sendError(toApiError(err), this.owner.quotaCloseCode) });
    this.done = this.pump();
  }

  get closed(): boolean {
    return this.voice.closed;
  }

  get signal(): AbortSignal {
    return this.voice.signal;
  }

  /** No more text is taken (the input ended, it was closed, or the balance ran out). */
  get inputEnded(): boolean {
    return this.utterance.inputEnded;
  }

  /** The balance could not hold a phrase: the input was ended by it. */
  get quotaExhausted(): boolean {
    return this.utterance.quotaExhausted;
  }

  /** Phrases are queued, being synthesized or waiting to be sent: audio is owed. */
  get owesAudio(): boolean {
    return this.utterance.owesAudio;
  }

  /** Takes a piece of text (refused whole with an error message when it cannot be taken), then flushes if asked. */
  take(text: string | undefined, flush: boolean): Promise<void> {
    return this.serially(async () => {
      if (this.utterance.finished || this.utterance.inputEnded) return;
      if (text) {
        const refusal = this.refusal(text);
        if (refusal) return this.sendError(refusal);
        await this.utterance.take(text);
      }
      if (flush) await this.utterance.flush();
    });
  }

  /** The input ended: everything received is spoken, then the final message. */
  endInput(): Promise<void> {
    return this.serially(() => this.utterance.endInput());
  }

  /**
   * The context was closed (ElevenLabs' `close_context`): what was flushed, or is already a certain phrase, is
   * spoken; text still waiting for more (never flushed) is dropped, uncharged. Then the final message.
   */
  closeInput(): Promise<void> {
    return this.serially(() => this.utterance.closeInput());
  }

  /** Ends the stream now: the phrase being synthesized is cancelled, no final message; the hold is released. */
  close(reason: string): Promise<void> {
    return this.voice.close(reason);
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
    try {
      this.voice.admit(text);
    } catch (err) {
      if (err instanceof SpeechLimitError) return toApiError(err);
      throw err;
    }
    if (this.setup.speakable) {
      const { unspeakable } = speechText(text, this.setup.speakable);
      if (unspeakable.length) {
        return new ApiError(
          'invalid_value',
          `text: ${this.setup.model} cannot pronounce ${unspeakable.slice(0, 8).map(describeChar).join(', ')}; this piece was not spoken, send it again without them.`,
          { param: 'text' },
        );
      }
    }
    return null;
  }

  /**
   * Sends the audio as it is encoded, one message at a time, waiting for the transport to drain. A message
   * that completes phrases is followed by their charge, once the transport has written it to the network.
   */
  private async pump(): Promise<void> {
    const { peer } = this.owner;
    const peerGone = () => void this.close('peer_closed');
    if (peer.signal.aborted) peerGone();
    else peer.signal.addEventListener('abort', peerGone, { once: true });
    const utterance = this.utterance;
    try {
      for await (const item of utterance.audio()) {
        if (item.bytes.length || item.alignments.length) {
          const outcome = peer.sendText(audioMessage(item.bytes, item.alignments, this.contextId));
          if (outcome === 'closed') break;
          this.owner.onAudio();
          if (item.charactersComplete > utterance.deliveredCharacters) {
            if (!(await this.chargeWhenFlushed(item.charactersComplete))) break;
          } else if (outcome === 'backpressure') await peer.drained();
        } else if (item.charactersComplete > utterance.deliveredCharacters) {
          // Its earlier messages held all of its audio.
          if (!(await this.chargeWhenFlushed(item.charactersComplete))) break;
        }
      }
      if (!utterance.closed) {
        peer.sendText(finalMessage(this.contextId));
        this.owner.onFinal(utterance.quotaExhausted);
      }
    } catch (err) {
      if (!utterance.closed) this.owner.onFailure(err);
    } finally {
      peer.signal.removeEventListener('abort', peerGone);
      // Every delivered phrase is charged already: what is still held is for phrases never delivered.
      await this.close('finished');
    }
  }

  /**
   * Charges the phrases completed up to `characters` once everything sent so far has been written to the
   * network; false (nothing charged) when the socket closed first. The pump waits for this, so at most one
   * phrase is ever delivered and not yet charged.
   */
  private async chargeWhenFlushed(characters: number): Promise<boolean> {
    if (!(await this.owner.peer.flushed())) return false;
    this.utterance.delivered(characters);
    await this.utterance.chargeDelivered();
    return true;
  }
}
