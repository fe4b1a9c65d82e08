/**
 * One open WebSocket as a duplex handler sees it (DuplexPeer over a uWS WebSocket). Every call on the uWS
 * socket goes through here and checks `closed` first: uWS throws (and the throw ends the process) when a
 * closed socket is touched. Sends are never dropped silently: a send uWS would drop, or one that takes the
 * socket past the silent-reader bound, closes the socket with 1008 instead (nothing is lost unnoticed).
 * The pongs uWS queues by itself, one per ping the client sends, count against the same bound (onPing).
 * A pre-auth socket (DuplexResult.preAuth) holds its place under the pre-auth caps and the tighter bound of
 * `preAuthMaxBufferedBytes` until its handler calls authenticated().
 */
import type uWS from 'uWebSockets.js';
import type { DuplexHandler, DuplexPeer, SendOutcome } from '../duplex/duplex-contract.js';
import type { Logger } from '../observability/logger.js';
import { CLOSE_CODES, CLOSE_REASONS, type CloseCode } from '../duplex/close-codes.js';

/** uWS's send() results (WebSocket.send in index.d.ts). */
const SEND_BACKPRESSURE = 0;
const SEND_DROPPED = 2;
/** WebSocket close reasons are limited to 123 bytes of UTF-8 (RFC 6455 §5.5: 125-byte control payload). */
const MAX_REASON_BYTES = 123;

export interface PeerLimits {
  /** A socket with more than this queued toward the client is closed 1008 (bounds memory per silent reader). */
  maxBufferedBytes: number;
  /** The same bound while the socket is pre-auth (its caller not yet known). */
  preAuthMaxBufferedBytes: number;
  /** Pings a pre-auth socket may send; one more and it is dropped (each costs a pong and a callback). */
  preAuthMaxPings: number;
  /** Above this, sends answer 'backpressure' (await drained()). */
  highWaterBytes: number;
  /** drained() resolves once the queue is under this. */
  lowWaterBytes: number;
}

/** What the peer counts (frames out); the sessions object owns the metrics. */
export interface PeerCounters {
  framesOut: { inc(): void };
  /** Counted by the sessions object as frames arrive; kept here so the labelled child is looked up once per socket. */
  framesIn: { inc(): void };
  /** A socket refused or closed by a limit (the reason label of kuma_websocket_refusals_total). */
  refused(reason: string): void;
}

/** A pre-auth socket closed by its handler is counted by its close reason when it is a plain token (start_timeout), else as `other`. */
const REASON_LABEL = /^[a-z_]{1,40}$/;

export class WebSocketPeer implements DuplexPeer {
  /** Set right after `open`; null until then, or when `open` threw. */
  handler: DuplexHandler | null = null;
  private closed = false;
  private pings = 0;
  private readonly abort = new AbortController();
  private drainWaiters: (() => void)[] = [];
  private flushWaiters: ((flushed: boolean) => void)[] = [];

  constructor(
    private readonly ws: uWS.WebSocket<unknown>,
    readonly requestId: string,
    readonly route: string,
    private readonly limits: PeerLimits,
    readonly counters: PeerCounters,
    private readonly logger: Logger,
    /** For a pre-auth socket: gives its place under the pre-auth caps back; null once authenticated (or never pre-auth). */
    private preAuthPlace: (() => void) | null = null,
  ) {}

  get isPreAuth(): boolean {
    return this.preAuthPlace !== null;
  }

  authenticated(): void {
    const release = this.preAuthPlace;
    this.preAuthPlace = null;
    release?.();
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  sendText(text: string): SendOutcome {
    return this.send(text, false);
  }

  sendBinary(bytes: Uint8Array): SendOutcome {
    return this.send(bytes, true);
  }

  bufferedAmount(): number {
    return this.closed ? 0 : this.ws.getBufferedAmount();
  }

  drained(): Promise<void> {
    if (this.closed || this.ws.getBufferedAmount() < this.limits.lowWaterBytes) return Promise.resolve();
    return new Promise<void>((resolve) => this.drainWaiters.push(resolve));
  }

  flushed(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    // Corked sends are written when the cork ends (inside send()), so what is buffered now is all that is left.
    if (this.ws.getBufferedAmount() === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => this.flushWaiters.push(resolve));
  }

  close(code: CloseCode, reason: string): void {
    if (this.closed) return;
    if (this.isPreAuth) this.counters.refused(REASON_LABEL.test(reason) ? reason : 'other');
    this.end(code, reason);
  }

  /**
   * uWS's ping event: it has just queued the pong itself, whether or not the client reads. A client that
   * sends pings and never reads would otherwise make uWS queue pongs up to maxBackpressure. A pre-auth
   * socket may send only a few: a flood of them (each read, answered and called back here) costs CPU long
   * before its pongs fill the kernel's buffers, and no carrier pings before its start message.
   */
  onPing(): void {
    if (this.closed) return;
    if (this.isPreAuth && ++this.pings > this.limits.preAuthMaxPings) {
      this.logger.info({ requestId: this.requestId, route: this.route }, 'pre-auth WebSocket sent too many pings: dropped');
      this.counters.refused('ping_flood');
      this.ws.close();
      return;
    }
    const buffered = this.ws.getBufferedAmount();
    if (buffered > this.maxBuffered) this.closeNotReading(buffered);
  }

  /** uWS's drain event: some of the queue went out. */
  onDrain(): void {
    if (this.closed || (this.drainWaiters.length === 0 && this.flushWaiters.length === 0)) return;
    const buffered = this.ws.getBufferedAmount();
    if (buffered < this.limits.lowWaterBytes) this.wakeDrainWaiters();
    if (buffered === 0) this.wakeFlushWaiters(true);
  }

  /** uWS's close event (whoever closed): from here on the socket must never be touched. */
  onClosed(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.authenticated(); // whatever ended it, a pre-auth socket's place is given back
    this.abort.abort(new Error(`WebSocket closed (${code})`));
    this.wakeDrainWaiters();
    this.wakeFlushWaiters(false);
    const handler = this.handler;
    if (!handler) return;
    try {
      handler.onClose(code, reason);
    } catch (err) {
      this.logger.error({ requestId: this.requestId, err }, 'WebSocket handler onClose threw');
    }
  }

  private send(message: string | Uint8Array, isBinary: boolean): SendOutcome {
    if (this.closed) return 'closed';
    let status = 1;
    // Corked: outside uWS's own callbacks, an uncorked send is a syscall per message.
    this.ws.cork(() => {
      status = this.ws.send(message, isBinary);
    });
    this.counters.framesOut.inc();
    if (status === SEND_DROPPED) {
      // maxBackpressure is set far above the cut-off, so this means a single oversized message: not lost silently.
      this.closeNotReading(this.ws.getBufferedAmount());
      return 'closed';
    }
    if (this.closed) return 'closed';
    // Checked after every send, whatever uWS answered: a corked send can report success while queueing.
    const buffered = this.ws.getBufferedAmount();
    if (status !== SEND_BACKPRESSURE && buffered === 0) return 'sent';
    if (buffered > this.maxBuffered) {
      this.closeNotReading(buffered);
      return 'closed';
    }
    return buffered > this.limits.highWaterBytes ? 'backpressure' : 'sent';
  }

  private get maxBuffered(): number {
    return this.isPreAuth ? this.limits.preAuthMaxBufferedBytes : this.limits.maxBufferedBytes;
  }

  /**
   * Closes 1008 `client is not reading`. uWS keeps an ended socket, with its close frame and all that is
   * queued, until the client reads them or uWS's ping timeout passes (16 s at the default idle timeout),
   * and it reports the close at once: a pre-auth socket, whose place under the caps is then given back,
   * is dropped instead (the client sees 1006), so that nothing it queued outlives its place.
   */
  private closeNotReading(buffered: number): void {
    const preAuth = this.isPreAuth;
    this.logger.info(
      { requestId: this.requestId, route: this.route, buffered, preAuth },
      preAuth ? 'pre-auth WebSocket client is not reading: dropped' : 'WebSocket client is not reading: closed 1008',
    );
    this.counters.refused('not_reading');
    if (preAuth) this.ws.close();
    else this.end(CLOSE_CODES.policyViolation, CLOSE_REASONS.notReading);
  }

  private end(code: CloseCode, reason: string): void {
    if (this.closed) return;
    // uWS calls the close handler (and so onClosed) synchronously from end().
    this.ws.end(code, truncateUtf8(reason, MAX_REASON_BYTES));
  }

  private wakeFlushWaiters(flushed: boolean): void {
    const waiters = this.flushWaiters;
    this.flushWaiters = [];
    for (const wake of waiters) wake(flushed);
  }

  private wakeDrainWaiters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const wake of waiters) wake();
  }
}

function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  // Cut on a character boundary: a reason ending mid-character is invalid UTF-8, which clients reject.
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
