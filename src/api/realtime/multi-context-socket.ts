/**
 * The multi-context speech socket (ElevenLabs `multi-stream-input`): several spoken streams on one socket,
 * each named by the `context_id` of its messages (a message without one goes to the default context), each
 * its own speaker, hold and bill (speech-context.ts) — a voice agent speaks its answer in one context and,
 * when the user barges in, closes it and speaks the next in another, without a new socket.
 *
 * Messages (README "Streaming speech socket"): `{"text": " ", "context_id"}` opens a context (a greeting,
 * not input); `{"text": piece, "context_id", "flush"?}` adds text; `{"text": "", "context_id"}` keeps the
 * context alive (and with `flush`, flushes it); `{"flush": true, "context_id"}` speaks what is pending;
 * `{"close_context": true, "context_id"}` ends it: what was flushed is spoken, text never flushed is dropped,
 * then `{"isFinal": true, "contextId"}`; `{"close_socket": true}` closes every context so, then the socket
 * (1000). Audio and error messages of a context carry `contextId`.
 *
 * Limits: at most MAX_CONTEXTS contexts open at once (ElevenLabs' number; a closing context counts until its
 * final message), each with the single-stream socket's text limits. A context with no message and no audio
 * owed for `inactivity_timeout` is closed (an `input_timeout_exceeded` error, then its final message); a
 * socket with no context and no message for as long is closed 1008, as the single-stream socket is.
 *
 * Lifecycle (primitives/session-lifecycle.ts): `close(reason)` ends the socket's session — every context
 * stops now; a context that ends on its own (its final message sent) closes alone.
 */
import { CLOSE_CODES, CLOSE_REASONS, type CloseCode } from '../../duplex/close-codes.js';
import type { DuplexHandler, DuplexPeer } from '../../duplex/duplex-contract.js';
import { ApiError, isCapacityRefusal, toApiError } from '../errors.js';
import { SessionLifecycle, type Session } from '../../primitives/session-lifecycle.js';
import { SpeechContext, type SpeechContextOwner, type SpeechSocketDeps, type SpeechSocketSetup } from './speech-context.js';
import { errorMessage, parseMultiContextMessage } from './speech-socket-messages.js';

/** Contexts open at once on one socket. */
export const MAX_CONTEXTS = 5;
/** The context of messages that name none. */
export const DEFAULT_CONTEXT_ID = 'default';

interface OpenContext {
  stream: SpeechContext;
  timer: NodeJS.Timeout | undefined;
  closing: boolean;
}

export class MultiContextSocket implements DuplexHandler, Session {
  private readonly lifecycle = new SessionLifecycle();
  private readonly contexts = new Map<string, OpenContext>();
  private work: Promise<void> = Promise.resolve(); // client messages, one after the other
  private closing: { code: CloseCode; reason: string } | null = null; // close_socket, or shutdown: close once every context ended
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: SpeechSocketDeps,
    private readonly setup: SpeechSocketSetup,
    private readonly peer: DuplexPeer,
  ) {
    this.armSocketTimer();
  }

  onText(frame: string): void {
    this.armSocketTimer();
    this.enqueue(() => this.handle(frame));
  }

  onBinary(): void {
    this.armSocketTimer();
    this.enqueue(async () =>
      this.sendError(new ApiError('invalid_value', 'Binary frames are not accepted: send JSON text messages such as {"text":"i ni ce ","context_id":"a"}.')),
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

  /** Ends the socket's session: every context stops now (each charges what it delivered). Idempotent. */
  close(reason: string): void {
    if (!this.lifecycle.close(reason)) return;
    clearTimeout(this.timer);
    for (const context of this.contexts.values()) {
      clearTimeout(context.timer);
      void context.stream.close(reason);
    }
  }

  /** The server is stopping: every context speaks what it received, as if its input had ended; then close 1001. */
  onShutdown(): void {
    this.enqueue(async () => {
      this.closing ??= { code: CLOSE_CODES.goingAway, reason: CLOSE_REASONS.serverShuttingDown };
      await Promise.all([...this.contexts.values()].map((context) => context.stream.endInput()));
      this.closeIfDone();
    });
  }

  /** The socket's key was revoked: an error message, then close 1008 `key_revoked`; every context is cancelled. */
  onKeyRevoked(): void {
    if (this.peer.signal.aborted) return;
    this.sendError(
      new ApiError('invalid_api_key', 'The API key of this socket has been revoked: the socket is closed.'),
      CLOSE_CODES.policyViolation,
      CLOSE_REASONS.keyRevoked,
    );
    this.closeWith(CLOSE_CODES.policyViolation, CLOSE_REASONS.keyRevoked);
  }

  private enqueue(task: () => Promise<void>): void {
    this.work = this.work.then(task).catch((err) => this.fail(err));
  }

  private async handle(frame: string): Promise<void> {
    if (this.peer.signal.aborted) return;
    let message;
    try {
      message = parseMultiContextMessage(frame);
    } catch (err) {
      return this.sendError(toApiError(err));
    }
    if (message.closeSocket) return this.closeSocket();
    const id = message.contextId ?? DEFAULT_CONTEXT_ID;
    const existing = this.contexts.get(id);
    if (this.closing)
      return this.sendError(
        new ApiError('invalid_request', 'The socket is closing ({"close_socket": true} was received): no more text is taken.'),
        null,
        undefined,
        id,
      );
    if (message.closeContext) {
      if (!existing)
        return this.sendError(
          new ApiError('invalid_value', `close_context: no context ${JSON.stringify(id)} is open on this socket.`, { param: 'context_id' }),
          null,
          undefined,
          id,
        );
      return this.closeContext(id, existing);
    }
    if (existing?.closing) {
      // After a balance refusal (already reported) more text is ignored without more errors.
      if (existing.stream.quotaExhausted) return;
      return this.sendError(
        new ApiError('invalid_request', `context ${JSON.stringify(id)} is closing: wait for its isFinal, or speak in a new context_id.`, {
          param: 'context_id',
        }),
        null,
        undefined,
        id,
      );
    }
    let text = message.text;
    let context = existing;
    if (!context) {
      if (this.contexts.size >= MAX_CONTEXTS) {
        const err = new ApiError(
          'invalid_request',
          `At most ${MAX_CONTEXTS} contexts may be open at once on one socket: close one ({"close_context": true, "context_id": …}) before opening another.`,
          { param: 'context_id' },
        );
        return this.sendError(err, null, 'max_active_conversations', id);
      }
      context = this.open(id);
      // A context opens with {"text": " "} (and its settings): a greeting, not input.
      if (text && !text.trim()) text = undefined;
    }
    this.armContextTimer(id, context);
    // {"text": ""} keeps the context alive: it is not input, and ends nothing.
    await context.stream.take(text || undefined, message.flush);
    if (context.stream.quotaExhausted) context.closing = true;
  }

  private open(id: string): OpenContext {
    const context: OpenContext = { stream: undefined as unknown as SpeechContext, timer: undefined, closing: false };
    const owner: SpeechContextOwner = {
      peer: this.peer,
      // The balance ends this context only: the socket stays open (others may still be speaking).
      quotaCloseCode: null,
      onAudio: () => {
        this.armSocketTimer();
        this.armContextTimer(id, context);
      },
      onFinal: () => {},
      onFailure: (err) => this.fail(err, id),
    };
    context.stream = new SpeechContext(this.deps, this.setup, owner, id);
    this.contexts.set(id, context);
    void context.stream.done.finally(() => {
      clearTimeout(context.timer);
      if (this.contexts.get(id) === context) this.contexts.delete(id);
      this.armSocketTimer();
      this.closeIfDone();
    });
    return context;
  }

  private async closeContext(id: string, context: OpenContext): Promise<void> {
    context.closing = true;
    clearTimeout(context.timer);
    await context.stream.closeInput();
  }

  private async closeSocket(): Promise<void> {
    this.closing ??= { code: CLOSE_CODES.normal, reason: CLOSE_REASONS.done };
    await Promise.all([...this.contexts].map(([id, context]) => (context.closing ? Promise.resolve() : this.closeContext(id, context))));
    this.closeIfDone();
  }

  private closeIfDone(): void {
    if (!this.closing || this.contexts.size > 0 || this.peer.signal.aborted) return;
    this.closeWith(this.closing.code, this.closing.reason);
  }

  /** Ends the session for `reason`, then closes the WebSocket with `code` and the same reason. */
  private closeWith(code: CloseCode, reason: string): void {
    this.close(reason);
    this.peer.close(code, reason);
  }

  /** A failure of the server's own in one context: logged, an error naming it, every context cancelled, close 1011 (1013 at capacity). */
  private fail(err: unknown, contextId?: string): void {
    if (this.peer.signal.aborted) return;
    const apiError = toApiError(err);
    const code = apiError.status === 503 ? CLOSE_CODES.tryAgainLater : CLOSE_CODES.internalError;
    if (isCapacityRefusal(err))
      this.deps.logger.warn({ requestId: this.peer.requestId, err: (err as Error).message }, 'speech socket refused: model at capacity');
    else if (apiError.status >= 500) this.deps.logger.error({ requestId: this.peer.requestId, err: (err as Error)?.message }, 'speech socket failed');
    this.sendError(apiError, code, undefined, contextId);
    this.closeWith(code, apiError.code);
  }

  private sendError(err: ApiError, closeCode: number | null = null, code?: string, contextId?: string): void {
    this.peer.sendText(errorMessage(err, closeCode, code, contextId));
  }

  /** A context idle for `inactivityMs` (no message, no audio owed) is closed, its queued audio still spoken. */
  private armContextTimer(id: string, context: OpenContext): void {
    clearTimeout(context.timer);
    if (context.closing || this.peer.signal.aborted) return;
    context.timer = setTimeout(() => {
      if (context.closing) return;
      if (context.stream.owesAudio) return this.armContextTimer(id, context);
      const seconds = this.setup.inactivityMs / 1000;
      const err = new ApiError(
        'invalid_request',
        `No message for context ${JSON.stringify(id)} for ${seconds} s while it was not speaking: it is closed. Send {"text": "", "context_id": …} to keep a context alive.`,
      );
      this.sendError(err, null, 'input_timeout_exceeded', id);
      this.enqueue(() => this.closeContext(id, context));
    }, this.setup.inactivityMs);
    context.timer.unref();
  }

  /** A socket with no context open and no message for `inactivityMs` is closed 1008. */
  private armSocketTimer(): void {
    clearTimeout(this.timer);
    if (this.peer.signal.aborted) return;
    this.timer = setTimeout(() => {
      if (this.contexts.size > 0) return this.armSocketTimer();
      const seconds = this.setup.inactivityMs / 1000;
      const err = new ApiError('invalid_request', `No message for ${seconds} s and no context open: the socket is closed.`);
      this.peer.sendText(errorMessage(err, CLOSE_CODES.policyViolation, CLOSE_REASONS.inputTimeoutExceeded));
      this.closeWith(CLOSE_CODES.policyViolation, CLOSE_REASONS.inputTimeoutExceeded);
    }, this.setup.inactivityMs);
    this.timer.unref();
  }
}
