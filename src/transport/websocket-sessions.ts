/**
 * The WebSocket half of the uWS app: the `ws('/*')` behaviour. An upgrade request goes through the same
 * Exchange as any HTTP request (router, auth, limits, errors, access log); a route that answers 'duplex' has
 * the exchange complete the upgrade (exchange.ts → ResponseSink.upgrade), and `open` here hands a
 * WebSocketPeer to the route's handler. Also the open sessions' registry for metrics and shutdown.
 *
 * Decisions the contract leaves open:
 * - Text frames: uWS validates UTF-8 itself and drops a connection that sends invalid UTF-8 (the client sees
 *   1006) before our callback runs, so a handler always receives valid text.
 * - Message size: uWS drops a connection whose message passes maxPayloadLength without a close frame
 *   (the client sees 1006), so uWS's limit is set to twice ours and we close with a clear 1009 between the two.
 */
import type uWS from 'uWebSockets.js';
import type { DuplexResult } from '../api/types.js';
import { Exchange } from './exchange.js';
import { readRequestHead } from './request-head.js';
import type { ServerState } from './server-state.js';
import { WebSocketPeer, type PeerLimits } from './websocket-peer.js';

export interface WebSocketOptions {
  /** Seconds without any frame (pongs count) before uWS closes the socket; pings go out automatically. */
  idleTimeoutS: number;
  /** A message larger than this is refused with close 1009. */
  maxMessageBytes: number;
  /** A client with more than this queued toward it is closed 1008 "client is not reading". */
  maxBufferedBytes: number;
}

export const WEBSOCKET_DEFAULTS: WebSocketOptions = {
  idleTimeoutS: 120,
  maxMessageBytes: 32 * 1024 * 1024,
  maxBufferedBytes: 4 * 1024 * 1024,
};

/** What rides on the uWS socket from the upgrade to `open`. */
export interface UpgradeData {
  requestId: string;
  route: string;
  result: DuplexResult;
  peer: WebSocketPeer | null;
}

type Socket = uWS.WebSocket<UpgradeData>;

export class WebSocketSessions {
  readonly open = new Set<WebSocketPeer>();
  readonly options: WebSocketOptions;
  private readonly limits: PeerLimits;
  private idleWaiter: (() => void) | null = null;

  constructor(private readonly server: ServerState) {
    this.options = { ...WEBSOCKET_DEFAULTS, ...server.options.websocket };
    const maxBuffered = this.options.maxBufferedBytes;
    const highWater = Math.min(256 * 1024, Math.max(1, Math.floor(maxBuffered / 2)));
    this.limits = { maxBufferedBytes: maxBuffered, highWaterBytes: highWater, lowWaterBytes: Math.max(1, Math.floor(highWater / 4)) };
  }

  behavior(): uWS.WebSocketBehavior<UpgradeData> {
    const { idleTimeoutS, maxMessageBytes, maxBufferedBytes } = this.options;
    return {
      maxPayloadLength: 2 * maxMessageBytes,
      idleTimeout: idleTimeoutS,
      sendPingsAutomatically: true,
      // Far above the silent-reader cut-off, which closes a socket long before uWS would drop a message.
      maxBackpressure: maxBufferedBytes + 2 * maxMessageBytes,
      upgrade: (res, req, context) => this.onUpgrade(res, req, context),
      open: (ws) => this.onOpen(ws),
      message: (ws, message, isBinary) => this.onMessage(ws, message, isBinary),
      drain: (ws) => ws.getUserData().peer?.onDrain(),
      close: (ws, code, message) => this.onClose(ws, code, message),
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
    for (const peer of [...this.open]) peer.close(1001, 'server shutting down');
  }

  private onUpgrade(res: uWS.HttpResponse, req: uWS.HttpRequest, context: uWS.us_socket_context_t): void {
    try {
      // As for HTTP: the head (Sec-WebSocket-Key/Protocol/Extensions included) is read before returning.
      new Exchange(this.server, res, readRequestHead(req), context).start();
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
    const peer = new WebSocketPeer(ws as uWS.WebSocket<unknown>, data.requestId, data.route, this.limits, { framesOut, framesIn }, logger);
    data.peer = peer;
    this.open.add(peer);
    metrics.websocketSessions.inc({ route: data.route });
    try {
      peer.handler = data.result.open(peer);
    } catch (err) {
      logger.error({ requestId: data.requestId, err }, 'WebSocket open threw');
      peer.close(1011, 'internal error');
    }
  }

  private onMessage(ws: Socket, message: ArrayBuffer, isBinary: boolean): void {
    const peer = ws.getUserData().peer;
    if (!peer || peer.isClosed) return;
    const { logger } = this.server.options;
    peer.counters.framesIn.inc();
    if (message.byteLength > this.options.maxMessageBytes) {
      peer.close(1009, `message too big (limit ${this.options.maxMessageBytes} bytes)`);
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
      peer.close(1011, 'internal error');
    }
  }

  private onClose(ws: Socket, code: number, message: ArrayBuffer): void {
    const data = ws.getUserData();
    const peer = data.peer;
    if (!peer) return;
    data.peer = null;
    this.open.delete(peer);
    this.server.options.metrics.websocketSessions.dec({ route: peer.route });
    peer.onClosed(code, Buffer.from(message).toString('utf8'));
    if (this.open.size === 0) this.idleWaiter?.();
  }
}
