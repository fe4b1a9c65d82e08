/**
 * The single-stream speech socket (ElevenLabs `stream-input`): client messages → one spoken stream
 * (speech-context.ts, which also holds the flow, the order and the bill) → audio messages. After the last
 * audio: `{"isFinal": true}`, then close 1000 (1008 when the balance ended the input).
 *
 * Errors: a bad message (not JSON, a field of the wrong type, text the voice cannot say, too long, too much
 * text waiting) gets an error message and the socket goes on; a server failure closes 1011, inactivity 1008.
 *
 * Lifecycle (primitives/session-lifecycle.ts): the socket's session ends with `close(reason)` — the peer
 * left, the key was revoked, a failure, inactivity, or the final message — which stops its stream; the
 * WebSocket close code that goes with each reason is sent here.
 */
import { CLOSE_CODES, CLOSE_REASONS, type CloseCode } from '../../duplex/close-codes.js';
import type { DuplexHandler, DuplexPeer } from '../../duplex/duplex-contract.js';
import { ApiError, isCapacityRefusal, toApiError } from '../errors.js';
import { SessionLifecycle, type Session } from '../../primitives/session-lifecycle.js';
import { SpeechContext, type SpeechContextOwner, type SpeechSocketDeps, type SpeechSocketSetup } from './speech-context.js';
import { errorMessage, parseClientMessage } from './speech-socket-messages.js';

export type { SpeechSocketDeps, SpeechSocketSetup } from './speech-context.js';

export class SpeechSocket implements DuplexHandler, SpeechContextOwner, Session {
  readonly quotaCloseCode = CLOSE_CODES.policyViolation;
  private readonly lifecycle = new SessionLifecycle();
  private readonly stream: SpeechContext;
  private work: Promise<void> = Promise.resolve(); // client messages, one after the other
  private firstMessage = true;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: SpeechSocketDeps,
    private readonly setup: SpeechSocketSetup,
    readonly peer: DuplexPeer,
  ) {
    this.stream = new SpeechContext(deps, setup, this);
    void this.stream.done.finally(() => clearTimeout(this.timer));
    this.armTimer();
  }

  onText(frame: string): void {
    this.armTimer();
    this.enqueue(() => this.handle(frame));
  }

  onBinary(): void {
    this.armTimer();
    this.enqueue(async () =>
      this.sendError(new ApiError('invalid_value', 'Binary frames are not accepted: send JSON text messages such as {"text":"i ni ce "}.')),
    );
  }

  get closed(): boolean {
    return this.lifecycle.closed;
  }

  get signal(): AbortSignal {
    return this.lifecycle.signal;
  }

  onClose(): void {
    this.close('peer_closed');
  }

  /** Ends the socket's session: its stream stops now (what was delivered is charged, the rest released). Idempotent. */
  close(reason: string): void {
    if (!this.lifecycle.close(reason)) return;
    clearTimeout(this.timer);
    void this.stream.close(reason);
  }

  /** The server is stopping: what was received is spoken, as if the input had ended. */
  onShutdown(): void {
    this.enqueue(() => this.stream.endInput());
  }

  /**
   * The socket's key was revoked: an error message, then close 1008 `key_revoked` at once; the phrase being
   * synthesized is cancelled, and nothing is charged after the revocation (the settlement is refused).
   */
  onKeyRevoked(): void {
    if (this.peer.signal.aborted) return;
    this.sendError(
      new ApiError('invalid_api_key', 'The API key of this socket has been revoked: the socket is closed.'),
      CLOSE_CODES.policyViolation,
      CLOSE_REASONS.keyRevoked,
    );
    this.closeWith(CLOSE_CODES.policyViolation, CLOSE_REASONS.keyRevoked);
  }

  onAudio(): void {
    this.armTimer();
  }

  onFinal(exhausted: boolean): void {
    if (exhausted) this.closeWith(CLOSE_CODES.policyViolation, CLOSE_REASONS.insufficientQuota);
    else this.closeWith(CLOSE_CODES.normal, CLOSE_REASONS.done);
  }

  /** A failure of the server's own (synthesis, encoding, store): logged, then close 1011 with a safe message. */
  onFailure(err: unknown): void {
    if (this.peer.signal.aborted) return;
    const apiError = toApiError(err);
    const code = apiError.status === 503 ? CLOSE_CODES.tryAgainLater : CLOSE_CODES.internalError;
    // A model at capacity (1013, try again later) is load, not a fault: warn, never error.
    if (isCapacityRefusal(err))
      this.deps.logger.warn({ requestId: this.peer.requestId, err: (err as Error).message }, 'speech socket refused: model at capacity');
    else if (apiError.status >= 500) this.deps.logger.error({ requestId: this.peer.requestId, err: (err as Error)?.message }, 'speech socket failed');
    this.sendError(apiError, code);
    this.closeWith(code, apiError.code);
  }

  /** Ends the session for `reason`, then closes the WebSocket with `code` and the same reason. */
  private closeWith(code: CloseCode, reason: string): void {
    this.close(reason);
    this.peer.close(code, reason);
  }

  private enqueue(task: () => Promise<void>): void {
    this.work = this.work.then(task).catch((err) => this.onFailure(err));
  }

  private async handle(frame: string): Promise<void> {
    if (this.peer.signal.aborted) return;
    // After an insufficient_quota error (already sent, the socket closing) more text is ignored without more errors.
    if (this.stream.quotaExhausted) return;
    if (this.stream.inputEnded)
      return this.sendError(new ApiError('invalid_request', 'The input has ended ({"text": ""} was received): no more text is taken on this socket.'));
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
    if (text === '') return this.stream.endInput();
    await this.stream.take(text, message.flush);
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
    if (this.peer.signal.aborted || this.closed) return;
    this.timer = setTimeout(() => {
      if (this.stream.inputEnded || this.stream.owesAudio) return this.armTimer();
      const seconds = this.setup.inactivityMs / 1000;
      const err = new ApiError(
        'invalid_request',
        `No message for ${seconds} s while nothing was being spoken: the socket is closed. Send {"text": ""} to end the input when you are done.`,
      );
      this.peer.sendText(errorMessage(err, CLOSE_CODES.policyViolation, CLOSE_REASONS.inputTimeoutExceeded));
      this.closeWith(CLOSE_CODES.policyViolation, CLOSE_REASONS.inputTimeoutExceeded);
    }, this.setup.inactivityMs);
    this.timer.unref();
  }
}
