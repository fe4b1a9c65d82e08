/**
 * The WebSocket Kuma opens to the integrator's ConversationRelay application, one per call in voice relay
 * mode. It checks the URL against the operator's allow-list before dialling (the check is injected, so this
 * file knows nothing of the policy), bounds the upgrade in time, parses what the app sends into typed
 * messages (a malformed one is answered with `error` and the link goes on, as Twilio does), bounds what
 * waits in the socket toward an app that stops reading, and pings the app to notice a dead peer. It never
 * throws once open: `send` answers false when the link is gone, and the end is reported once, by `onClose`.
 *
 *   const link = await RelayLink.connect(relayUrl, { checkUrl, signal, onMessage, onInvalid, onClose });
 *   link.send(setupMessage({ sessionId, callSid, from, to, direction, customParameters }));  // first, always
 *
 * Events reach the handlers only after `connect` has resolved (a message the app sent at once is held till
 * then), so the caller always holds `link` when its handlers run.
 */
import WebSocket from 'ws';
import { SessionLifecycle } from '../../primitives/session-lifecycle.js';
import { RelayLinkError, RelayMessageError } from './relay-errors.js';
import { errorMessage, invalidMessageDescription, parseAppMessage, type AppMessage, type KumaMessage } from './relay-messages.js';
import { ABNORMAL_CLOSURE, CLOSE_CODES, CLOSE_REASONS, type CloseCode } from '../../duplex/close-codes.js';

export interface RelayLinkEvents {
  /** A well-formed message from the application. */
  onMessage(message: AppMessage): void;
  /** A message Kuma could not use; the app has already been sent an `error` about it. */
  onInvalid?(error: RelayMessageError): void;
  /**
   * The link ended: the app closed it, it dropped, or Kuma closed it (code and reason say which). Once.
   * `error` is set when one of these handlers threw (the link closed itself with 1011 rather than let the
   * throw reach the process).
   */
  onClose(code: number, reason: string, error?: unknown): void;
}

/** An address the allow-list vetted for the URL's host. */
export interface PinnedAddress {
  address: string;
  family: 4 | 6;
}

export interface RelayLinkOptions extends RelayLinkEvents {
  /** The operator's allow-list check; throws (anything) to refuse. Runs before any connection is made. */
  /**
   * May answer the vetted address to connect to: the link then connects there rather than resolving the
   * name again (a second resolution could be rebound to an address the check never saw).
   */
  checkUrl(url: URL): Promise<PinnedAddress | void> | PinnedAddress | void;
  connectTimeoutMs?: number;
  /** Aborts the connect; after the link opened, closes it (1001). */
  signal?: AbortSignal;
  /** Extra upgrade headers (e.g. a signature the app verifies). */
  headers?: Record<string, string>;
  /** Largest message accepted from the app; a larger one closes the link with 1009. */
  maxMessageBytes?: number;
  /** Bytes that may wait in the socket toward the app before the link gives up on it. */
  maxBufferedBytes?: number;
  /** How often to ping; a ping unanswered by the next one ends the link. */
  pingIntervalMs?: number;
}

export const RELAY_LINK_DEFAULTS = {
  connectTimeoutMs: 5_000,
  maxMessageBytes: 256 * 1024,
  maxBufferedBytes: 1024 * 1024,
  pingIntervalMs: 20_000,
} as const;

/** Close codes the link itself uses, so the call core and logs can tell them apart. */
export const RELAY_CLOSE = {
  normal: CLOSE_CODES.normal,
  goingAway: CLOSE_CODES.goingAway,
  /** The app stopped reading (buffered past the bound) or stopped answering pings. */
  unresponsive: CLOSE_CODES.internalError,
} as const;

/** A dns.lookup that answers the vetted address (TLS still checks the certificate against the host name). */
function pinnedLookup(pinned: PinnedAddress) {
  return (_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void): void => {
    if (options?.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  };
}

/**
 * The link follows the sessions' lifecycle idiom (`closed`, a `signal` that fires once it ends, an end that
 * happens once), but its `close` takes a WebSocket close code as well as a reason: the app reads both.
 */
export class RelayLink {
  /** Ended, with the close reason onClose reports: by Kuma, by the app, or the connection dropping. */
  private readonly lifecycle = new SessionLifecycle<string>();
  private awaitingPong = false;
  private pingTimer: NodeJS.Timeout | undefined;
  /** Events that came before `connect` resolved, delivered once the caller holds the link (see connect). */
  private held: Array<() => void> | null = [];
  private handlerError: unknown;
  private socketError: Error | undefined;
  private closeDelivered = false;
  private readonly onAbort = () => this.close(RELAY_CLOSE.goingAway, CLOSE_REASONS.callEnded);

  /** Listens from before the upgrade completes: ws may emit a message the app sent at once in the same tick as 'open'. */
  private constructor(
    private readonly ws: WebSocket,
    private readonly options: RelayLinkOptions,
  ) {
    ws.on('message', (data, isBinary) => this.receive(data as Buffer, isBinary));
    ws.on('pong', () => (this.awaitingPong = false));
    // 'error' precedes 'close'; without a listener ws would throw it at the process.
    ws.on('error', (error) => (this.socketError ??= error));
    ws.on('close', (code, reason) => this.finish(...this.describeClose(code, reason.toString('utf8'))));
  }

  /** ws reports a connection it dropped itself (oversized or broken frames) as 1006; say what happened. */
  private describeClose(code: number, reason: string): [number, string] {
    if (code !== ABNORMAL_CLOSURE || this.socketError === undefined) return [code, reason];
    if ((this.socketError as { code?: string }).code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') {
      return [
        CLOSE_CODES.messageTooBig,
        `the relay application sent a message over ${this.options.maxMessageBytes ?? RELAY_LINK_DEFAULTS.maxMessageBytes} bytes`,
      ];
    }
    return [code, `the relay connection failed: ${this.socketError.message}`];
  }

  /** Checks the URL, dials, and resolves once the upgrade completed; rejects with a RelayLinkError. */
  static async connect(url: string, options: RelayLinkOptions): Promise<RelayLink> {
    const target = parseRelayUrl(url);
    if (options.signal?.aborted) throw new RelayLinkError('aborted', 'the call ended before the relay link opened');
    let pinned: PinnedAddress | void;
    try {
      pinned = await options.checkUrl(target);
    } catch (cause) {
      const why = cause instanceof Error ? `: ${cause.message}` : '';
      throw new RelayLinkError('not_allowed', `the relay URL's host ${target.host} is not allowed${why}`, { cause });
    }
    const timeoutMs = options.connectTimeoutMs ?? RELAY_LINK_DEFAULTS.connectTimeoutMs;
    const ws = new WebSocket(target, {
      headers: options.headers,
      maxPayload: options.maxMessageBytes ?? RELAY_LINK_DEFAULTS.maxMessageBytes,
      // Redirects would reach hosts the allow-list never saw.
      followRedirects: false,
      handshakeTimeout: timeoutMs,
      perMessageDeflate: false,
      ...(pinned ? { lookup: pinnedLookup(pinned) } : {}),
    });
    const link = new RelayLink(ws, options);
    try {
      await opened(ws, timeoutMs, options.signal);
    } catch (error) {
      link.lifecycle.close('the relay link did not open'); // the caller gets the rejection, never an onClose
      link.held = null;
      throw error;
    }
    link.started();
    // The caller's code after `await connect()` runs before this: it sees events only once it holds the link.
    setImmediate(() => link.release());
    return link;
  }

  get isOpen(): boolean {
    return !this.lifecycle.closed && this.ws.readyState === WebSocket.OPEN;
  }

  /** The link has ended (onClose has been, or is about to be, called). */
  get closed(): boolean {
    return this.lifecycle.closed;
  }

  /** Aborted once the link has ended, however it ended. */
  get signal(): AbortSignal {
    return this.lifecycle.signal;
  }

  /** Sends one message as JSON text; false (never a throw) when the link is gone or has just given up. */
  send(message: KumaMessage): boolean {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify(message));
    const maxBuffered = this.options.maxBufferedBytes ?? RELAY_LINK_DEFAULTS.maxBufferedBytes;
    if (this.ws.bufferedAmount > maxBuffered) {
      this.abandon(`the relay application is not reading its messages (${this.ws.bufferedAmount} bytes waiting)`);
      return false;
    }
    return true;
  }

  /** Closes the link (idempotent); onClose reports it with this code and reason. */
  close(code: CloseCode = RELAY_CLOSE.normal, reason = ''): void {
    if (this.lifecycle.closed) return;
    if (this.ws.readyState === WebSocket.OPEN) {
      this.ws.close(code, reason);
      // The app may never answer the close frame; report the end now rather than after ws's 30 s wait.
      this.finish(code, reason);
    } else {
      this.ws.terminate();
      this.finish(code, reason);
    }
  }

  private started(): void {
    this.pingTimer = setInterval(() => this.ping(), this.options.pingIntervalMs ?? RELAY_LINK_DEFAULTS.pingIntervalMs);
    this.pingTimer.unref();
    if (this.options.signal?.aborted) this.close(RELAY_CLOSE.goingAway, CLOSE_REASONS.callEnded);
    else this.options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const deliver of held) {
      // A handler that closed the link mid-way has had its onClose: nothing is delivered after it.
      if (this.closeDelivered) break;
      this.guarded(deliver);
    }
  }

  private emit(deliver: () => void): void {
    if (this.held !== null) this.held.push(deliver);
    else this.guarded(deliver);
  }

  /** A handler's throw would escape from a ws event listener and stop the process: it ends this call instead. */
  private guarded(deliver: () => void): void {
    try {
      deliver();
    } catch (error) {
      this.handlerError ??= error;
      this.close(RELAY_CLOSE.unresponsive, 'internal error while handling a relay message');
    }
  }

  private receive(data: Buffer, isBinary: boolean): void {
    if (this.lifecycle.closed) return;
    let message: AppMessage;
    const text = isBinary ? null : data.toString('utf8');
    try {
      if (text === null) throw new RelayMessageError('unsupported_frame', 'binary frames are not part of ConversationRelay; send JSON text');
      message = parseAppMessage(text);
    } catch (error) {
      const invalid = error instanceof RelayMessageError ? error : new RelayMessageError('invalid_message', 'the message could not be read');
      this.send(errorMessage(invalidMessageDescription(invalid, text ?? undefined)));
      this.emit(() => this.options.onInvalid?.(invalid));
      return;
    }
    this.emit(() => this.options.onMessage(message));
  }

  private ping(): void {
    if (!this.isOpen) return;
    if (this.awaitingPong) {
      this.abandon('the relay application stopped answering pings');
      return;
    }
    this.awaitingPong = true;
    this.ws.ping();
  }

  /** Gives up on an unresponsive app: no close handshake (it would wait behind the unread bytes). */
  private abandon(reason: string): void {
    if (this.lifecycle.closed) return;
    this.ws.terminate();
    this.finish(RELAY_CLOSE.unresponsive, reason);
  }

  private finish(code: number, reason: string): void {
    if (!this.lifecycle.close(reason)) return;
    clearInterval(this.pingTimer);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.emit(() => {
      this.closeDelivered = true;
      this.options.onClose(code, reason, this.handlerError);
    });
  }
}

function parseRelayUrl(url: string): URL {
  if (!URL.canParse(url)) throw new RelayLinkError('invalid_url', 'the relay URL is not an absolute URL');
  const target = new URL(url);
  if (target.protocol !== 'wss:' && target.protocol !== 'ws:') {
    throw new RelayLinkError('invalid_url', `the relay URL must be ws:// or wss://, not ${target.protocol}//`);
  }
  return target;
}

/** Settles once, whichever of open, refusal, failure, timeout or abort comes first; terminates on failure. */
function opened(ws: WebSocket, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (error: RelayLinkError | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      ws.off('open', onOpen);
      if (error === null) return resolve();
      ws.terminate();
      reject(error);
    };
    const onOpen = () => settle(null);
    const onAbort = () => settle(new RelayLinkError('aborted', 'the call ended before the relay link opened'));
    const timeout = () => new RelayLinkError('connect_timeout', `the relay application did not accept the WebSocket within ${timeoutMs} ms`);
    // Our own timer as well as ws's handshakeTimeout: it also bounds DNS and TCP/TLS setup.
    const timer = setTimeout(() => settle(timeout()), timeoutMs);
    ws.once('open', onOpen);
    ws.once('unexpected-response', (_request, response) => {
      response.resume();
      settle(new RelayLinkError('connect_failed', `the relay application answered the WebSocket upgrade with HTTP ${response.statusCode}`));
    });
    ws.once('error', (cause) => {
      if (/handshake has timed out/i.test(cause.message)) return settle(timeout());
      settle(new RelayLinkError('connect_failed', `could not connect to the relay application: ${cause.message}`, { cause }));
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
