/**
 * The WebSocket half of the uWS app: its `ws` behaviours, one for `/*` and one per route with its own
 * bound (WebSocketRouteLimits: the carrier streams). An upgrade request goes through the same Exchange as
 * any HTTP request (router, auth, limits, errors, access log); a route that answers 'duplex' has the
 * exchange complete the upgrade (exchange.ts → ResponseSink.upgrade), and `open` here hands a
 * WebSocketPeer to the route's handler. Also the open sessions' registry for metrics and shutdown, and
 * the caps on pre-auth sockets (preauth-gate.ts).
 *
 * Decisions the contract leaves open:
 * - Text frames: uWS validates UTF-8 itself and drops a connection that sends invalid UTF-8 (the client sees
 *   1006) before our callback runs, so a handler always receives valid text.
 * - Message size: uWS buffers a message whole, up to its behaviour's maxPayloadLength, and drops a
 *   connection whose message passes it without a close frame (the client sees 1006). On the default
 *   behaviour that limit is twice ours, and we close with a clear 1009 between the two; a route with its
 *   own bound gets a behaviour whose limit is that bound, so it never buffers more (its handler refuses
 *   what it will not take below that).
 * - Pongs: uWS answers every ping with a pong it queues itself, counted by onPing against the same
 *   cut-off as our sends.
 * - Not done here because uWS does not allow it: an unmasked client frame cannot be refused (uWS never
 *   reads the mask bit: it takes the 4 bytes after the length as the mask), and a close frame with an
 *   invalid code (999) is answered by uWS with an empty close frame (the client sees 1005), not 1002, before
 *   our close handler runs (README "Security").
 */
import type uWS from 'uWebSockets.js';
import type { DuplexResult, WebSocketRouteLimits } from '../api/types.js';
import { Exchange, type UpgradeVia } from './exchange.js';
import { PreAuthGate, preAuthRefusalError, type PreAuthLimits } from './preauth-gate.js';
import { readRequestHead } from './request-head.js';
import type { ServerState } from './server-state.js';
import { WebSocketPeer, type PeerLimits } from './websocket-peer.js';
import { ABNORMAL_CLOSURE, CLOSE_CODES, CLOSE_REASONS, messageTooBigReason } from '../duplex/close-codes.js';

export interface WebSocketOptions extends PreAuthLimits {
  /** Seconds without any frame (pongs count) before uWS closes the socket; pings go out automatically. */
  idleTimeoutS: number;
  /** A message larger than this is refused with close 1009 (routes with their own bound: see WebSocketRouteLimits). */
  maxMessageBytes: number;
  /** A client with more than this queued toward it is closed 1008 "client is not reading". */
  maxBufferedBytes: number;
  /** The same while the socket is pre-auth: it is then sent nothing but pongs. */
  preAuthMaxBufferedBytes: number;
  /** Pings a pre-auth socket may send before it is dropped. */
  preAuthMaxPings: number;
}

export const WEBSOCKET_DEFAULTS: WebSocketOptions = {
  idleTimeoutS: 120,
  maxMessageBytes: 32 * 1024 * 1024,
  maxBufferedBytes: 4 * 1024 * 1024,
  preAuthMaxBufferedBytes: 16 * 1024,
  preAuthMaxPings: 8,
  maxSockets: 256,
  maxPerAddress: 16,
};

/** What rides on the uWS socket from the upgrade to `open`. */
export interface UpgradeData {
  requestId: string;
  route: string;
  result: DuplexResult;
  peer: WebSocketPeer | null;
  /** A pre-auth socket's place under the caps, taken at the upgrade (given back by the peer). */
  preAuthPlace: (() => void) | null;
}

type Socket = uWS.WebSocket<UpgradeData>;

/** The reason uWS gives its close handler when it dropped a socket for a message over maxPayloadLength. */
const UWS_TOO_BIG = 'Received too big message';

export class WebSocketSessions {
  readonly open = new Set<WebSocketPeer>();
  readonly options: WebSocketOptions;
  private readonly limits: PeerLimits;
  private readonly preAuth: PreAuthGate;
  private idleWaiter: (() => void) | null = null;

  constructor(private readonly server: ServerState) {
    this.options = { ...WEBSOCKET_DEFAULTS, ...server.options.websocket };
    const maxBuffered = this.options.maxBufferedBytes;
    const highWater = Math.min(256 * 1024, Math.max(1, Math.floor(maxBuffered / 2)));
    const { preAuthMaxBufferedBytes, preAuthMaxPings } = this.options;
    this.limits = {
      maxBufferedBytes: maxBuffered,
      preAuthMaxBufferedBytes,
      preAuthMaxPings,
      highWaterBytes: highWater,
      lowWaterBytes: Math.max(1, Math.floor(highWater / 4)),
    };
    this.preAuth = new PreAuthGate(this.options);
  }

  /** The behaviour of `/*` (no `route` limits) or of a route with its own bound. */
  behavior(route?: WebSocketRouteLimits): uWS.WebSocketBehavior<UpgradeData> {
    const { idleTimeoutS, maxMessageBytes, maxBufferedBytes } = this.options;
    const maxPayloadLength = route?.maxPayloadBytes ?? 2 * maxMessageBytes;
    return {
      maxPayloadLength,
      idleTimeout: idleTimeoutS,
      sendPingsAutomatically: true,
      // Far above the silent-reader cut-off, which closes a socket long before uWS would drop a message.
      maxBackpressure: maxBufferedBytes + maxPayloadLength,
      upgrade: (res, req, context) => this.onUpgrade(res, req, { context, route, sessions: this }),
      open: (ws) => this.onOpen(ws),
      message: (ws, message, isBinary) => this.onMessage(ws, message, isBinary),
      ping: (ws) => ws.getUserData().peer?.onPing(),
      drain: (ws) => ws.getUserData().peer?.onDrain(),
      close: (ws, code, message) => this.onClose(ws, code, message),
    };
  }

  /**
   * A place for a pre-auth socket from `address`, taken now (at the upgrade); throws the 503/429 ApiError
   * when a cap is full (counted in kuma_websocket_refusals_total).
   */
  admitPreAuth(address: string, route: string): () => void {
    const refusal = this.preAuth.refusal(address);
    if (refusal) {
      this.server.options.metrics.websocketRefusals.inc({ route, reason: refusal });
      this.server.options.logger.info({ route, reason: refusal }, 'pre-auth WebSocket refused');
      throw preAuthRefusalError(refusal);
    }
    const gauge = this.server.options.metrics.websocketPreAuth;
    const release = this.preAuth.take(address);
    gauge.inc();
    let given = false;
    return () => {
      if (given) return;
      given = true;
      release();
      gauge.dec();
    };
  }

  /**
   * Shutdown: tells every session, waits up to `graceMs` for them to end on their own, then closes the
   * rest with 1001 (going away).
   */
  async shutdown(graceMs: number): Promise<void> {
    for (const peer of this.open) {
      try {
        peer.handler?.onShutdown?.();
      } catch (err) {
        this.server.options.logger.error({ requestId: peer.requestId, err }, 'WebSocket handler onShutdown threw');
      }
    }
    if (this.open.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.idleWaiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    for (const peer of [...this.open]) peer.close(CLOSE_CODES.goingAway, CLOSE_REASONS.serverShuttingDown);
  }

  private onUpgrade(res: uWS.HttpResponse, req: uWS.HttpRequest, via: UpgradeVia): void {
    try {
      // As for HTTP: the head (Sec-WebSocket-Key/Protocol/Extensions included) is read before returning.
      new Exchange(this.server, res, readRequestHead(req), via).start();
    } catch (err) {
      this.server.options.logger.error({ err }, 'upgrade setup threw');
      try {
        res.close();
      } catch {
        // already answered or aborted
      }
    }
  }

  private onOpen(ws: Socket): void {
    const data = ws.getUserData();
    const { metrics, logger } = this.server.options;
    // Labelled children looked up once per socket: a labels object hashed per frame cost ≈ 1 µs at 25,000 frames/s.
    const framesOut = metrics.websocketFrames.labels({ route: data.route, direction: 'out' });
    const framesIn = metrics.websocketFrames.labels({ route: data.route, direction: 'in' });
    const refused = (reason: string) => metrics.websocketRefusals.inc({ route: data.route, reason });
    const peer = new WebSocketPeer(
      ws as uWS.WebSocket<unknown>,
      data.requestId,
      data.route,
      this.limits,
      { framesOut, framesIn, refused },
      logger,
      data.preAuthPlace,
    );
    data.preAuthPlace = null; // the peer holds it now
    data.peer = peer;
    this.open.add(peer);
    metrics.websocketSessions.inc({ route: data.route });
    try {
      peer.handler = data.result.open(peer);
    } catch (err) {
      logger.error({ requestId: data.requestId, err }, 'WebSocket open threw');
      peer.close(CLOSE_CODES.internalError, CLOSE_REASONS.internalError);
    }
  }

  private onMessage(ws: Socket, message: ArrayBuffer, isBinary: boolean): void {
    const peer = ws.getUserData().peer;
    if (!peer || peer.isClosed) return;
    const { logger } = this.server.options;
    peer.counters.framesIn.inc();
    if (message.byteLength > this.options.maxMessageBytes) {
      peer.counters.refused('message_too_big');
      peer.close(CLOSE_CODES.messageTooBig, messageTooBigReason(this.options.maxMessageBytes));
      return;
    }
    const handler = peer.handler;
    if (!handler) return;
    try {
      // uWS reuses `message` after this callback returns: text is decoded (a copy), binary copied out.
      if (isBinary) handler.onBinary(new Uint8Array(message.slice(0)));
      else handler.onText(Buffer.from(message).toString('utf8'));
    } catch (err) {
      // A handler bug costs its own socket, never the process.
      logger.error({ requestId: peer.requestId, err }, 'WebSocket handler threw');
      peer.close(CLOSE_CODES.internalError, CLOSE_REASONS.internalError);
    }
  }

  private onClose(ws: Socket, code: number, message: ArrayBuffer): void {
    const data = ws.getUserData();
    const peer = data.peer;
    if (!peer) return;
    data.peer = null;
    this.open.delete(peer);
    this.server.options.metrics.websocketSessions.dec({ route: peer.route });
    const reason = Buffer.from(message).toString('utf8');
    if (code === ABNORMAL_CLOSURE && reason === UWS_TOO_BIG) peer.counters.refused('message_too_big');
    peer.onClosed(code, reason);
    if (this.open.size === 0) this.idleWaiter?.();
  }
}
