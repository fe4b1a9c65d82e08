/**
 * What every request of one server shares: its options, router and CORS headers (built once), the
 * requests in flight, and whether the server is draining for shutdown.
 */
import { accessLogger, type Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { HttpRoute } from '../api/types.js';
import { corsHeaders } from './cors.js';
import type { StaticSite } from './static-site.js';
import { Router } from './router.js';
import type { WebSocketOptions } from './websocket-sessions.js';

export interface HttpServerOptions {
  host: string;
  port: number;
  routes: HttpRoute[];
  logger: Logger;
  metrics: Metrics;
  corsOrigin: string;
  maxJsonBodyBytes: number;
  maxUploadBytes: number;
  uploadSpillBytes: number;
  tmpDir: string;
  streamStallTimeoutMs: number;
  /** How much of an unread request body is read and dropped before an early answer (see BodyQueue.drainRest). */
  drainLimitBytes?: number;
  drainTimeoutMs?: number;
  /** WebSocket limits (websocket-sessions.ts WEBSOCKET_DEFAULTS when absent). */
  websocket?: Partial<WebSocketOptions>;
  /** Serve https:// and wss:// with this certificate and key (PEM file paths); plain http:// and ws:// when absent. */
  tls?: { certFile: string; keyFile: string };
  /**
   * Share the port with other processes listening on it (SO_REUSEPORT): a cluster's workers. Otherwise the
   * port is bound exclusively, and a port already in use fails the start.
   */
  sharedPort?: boolean;
  /** Static files (Kuma Studio) served at paths no route serves; none when absent. */
  site?: StaticSite;
}

/** Something in flight that shutdown can cancel once its grace period is over. */
export interface Cancellable {
  cancel(reason: Error): void;
}

const METHODS = new Set<string>(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/**
 * Lingering, as nginx's lingering_close does: before an early answer the rest of the upload is read and
 * dropped for up to this long (and up to `drainLimitBytes`), so the client has finished sending when the
 * answer comes, and a close cannot turn into a reset that hides the answer from it.
 */
const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
const MIN_DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
/**
 * When stopping, how long a connection accepted just before the listener closed gets to send its request
 * before the sockets close (Go's http.Server.Shutdown gives such "new" connections 5 s). The client wrote it
 * right after connecting, so it is normally there at once; this covers a client slowed by a busy machine.
 * Only a connection opened this recently delays the stop, by at most this long.
 */
const NEW_CONNECTION_SETTLE_MS = 500;
/**
 * After the grace period, how long requests cancelled by shutdown get to write their 503 before the
 * sockets close: the cancellation reaches the decoder and the model at their next step (milliseconds),
 * then holds are released and the answer is written.
 */
const CANCELLED_ANSWER_MS = 2_000;

export class ServerState {
  readonly router: Router;
  /** The same for every response (CORS, nosniff): built once, copied into each response's headers. */
  readonly baseHeaders: Record<string, string>;
  readonly drainLimitBytes: number;
  readonly drainTimeoutMs: number;
  readonly inFlight = new Set<Cancellable>();
  /** Writes the one line per request. */
  readonly accessLog: Logger;
  /**
   * Stopping: the listener is closed, and a request on a connection already open is still served (and its
   * connection closed after the answer), until the grace period is over.
   */
  draining = false;
  /** The grace period is over: a request that arrives now is answered 503 (retry elsewhere). */
  refusing = false;
  /** When the latest HTTP connection was accepted (performance.now()). */
  private lastConnectionAt = -Infinity;
  private idleWaiter: (() => void) | null = null;

  constructor(readonly options: HttpServerOptions) {
    this.router = new Router(options.routes);
    // nosniff: error bodies echo the path or a model name; a browser must never read one as HTML or script.
    this.baseHeaders = { ...corsHeaders(options.corsOrigin), 'x-content-type-options': 'nosniff' };
    this.accessLog = accessLogger(options.logger);
    this.drainLimitBytes = options.drainLimitBytes ?? Math.max(MIN_DRAIN_LIMIT_BYTES, 4 * options.maxUploadBytes);
    this.drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  }

  isKnownMethod(method: string): boolean {
    return METHODS.has(method);
  }

  /** Called as each HTTP connection is accepted. */
  connectionOpened(): void {
    this.lastConnectionAt = performance.now();
  }

  /** Called as each request ends: wakes a shutdown waiting for the last one. */
  afterFinish(): void {
    if (this.draining && this.inFlight.size === 0) this.idleWaiter?.();
  }

  /**
   * Stops taking new connections (the caller has closed the listener) and waits up to `graceMs` for the
   * requests in flight, and for those still arriving on connections accepted before the close, then refuses
   * and cancels what is left (each answers 503 with Retry-After, exchange.ts) and waits a little for those
   * answers to go out.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    await this.untilSettled(performance.now() + graceMs);
    if (this.inFlight.size === 0) return;
    this.refusing = true;
    for (const request of this.inFlight) request.cancel(new Error('server shutting down'));
    await this.untilIdle(CANCELLED_ANSWER_MS);
  }

  /**
   * Resolves once no request is in flight and no connection was accepted within NEW_CONNECTION_SETTLE_MS
   * (its request may be on its way), or at `deadline`.
   */
  private async untilSettled(deadline: number): Promise<void> {
    for (;;) {
      await this.untilIdle(deadline - performance.now());
      if (this.inFlight.size > 0) return; // the deadline came first
      const settleLeft = Math.min(this.lastConnectionAt + NEW_CONNECTION_SETTLE_MS, deadline) - performance.now();
      if (settleLeft <= 0) return;
      await new Promise((resolve) => setTimeout(resolve, settleLeft));
    }
  }

  /** Resolves once no request is in flight, or after `ms`. */
  private untilIdle(ms: number): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.idleWaiter = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.idleWaiter = done;
    });
  }
}
