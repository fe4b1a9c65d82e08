/**
 * One HTTP request and its response, from uWS's callback to the access-log line. The per-request state
 * lives in the fields of one object and the steps are methods on the prototype, because closures made per
 * request (about fifteen of them before) were the largest cost left on a small request: garbage collection
 * took a fifth of the I/O thread, and tsx's keep-names transform wraps every named closure it creates.
 * The exchange is also the handler's ApiRequest and the result writer's WriteContext, so neither needs an
 * object of its own; the body reader is made only when a handler reads the body.
 */
import { performance } from 'node:perf_hooks';
import type uWS from 'uWebSockets.js';
import { ApiError, isCapacityRefusal, toApiError } from '../api/errors.js';
import type { ApiRequest, ApiResult, DuplexResult, HttpMethod, RequestBody, Surface, WebSocketRouteLimits } from '../api/types.js';
import type { UpgradeData } from './websocket-sessions.js';
import type { MultipartForm } from '../api/uploads.js';
import { BodyQueue } from './body-queue.js';
import type { ServerState } from './server-state.js';
import { preflightHeaders } from './cors.js';
import { readJsonBody } from './json-body.js';
import { LazyAbort } from './lazy-abort.js';
import { parseMultipart } from './multipart.js';
import { newRequestId } from './request-id.js';
import type { RequestHead } from './request-head.js';
import { ResponseSink } from './response-sink.js';
import { writeDelivered, writeError, writeResult, writeWhole, type WriteContext } from './result-writer.js';
import { staticResponse, type StaticAsset } from './static-site.js';

/** How an upgrade request came in: through which uWS behaviour (websocket-sessions.ts). */
export interface UpgradeVia {
  context: uWS.us_socket_context_t;
  /** The bound of that behaviour: a route's own, or undefined for the default `/*` one. */
  route: WebSocketRouteLimits | undefined;
  /** Takes a pre-auth socket's place under the caps, or throws the ApiError (429/503) of a full cap. */
  sessions: { admitPreAuth(address: string, route: string): () => void };
}

export class Exchange implements ApiRequest, WriteContext {
  readonly method: HttpMethod;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly requestId = newRequestId();
  params: Record<string, string> = NO_PARAMS;
  /** The same object the writers spread into every response: headers set here reach any answer. */
  readonly responseHeaders: Record<string, string>;
  readonly sink: ResponseSink;
  readonly headOnly: boolean;

  private readonly started = performance.now();
  private readonly rawMethod: string;
  private readonly rawQuery: string;
  private readonly framingError: string | null;
  private readonly abort = new LazyAbort();
  /** Made when the request has a body, or when a handler reads an empty one (most requests never do). */
  private queue: BodyQueue | null = null;
  private parsedQuery: URLSearchParams | null = null;
  private bodyReader: RequestBody | null = null;
  /** Callbacks of whoever must know that this response is over (a rate-limit place to give back). */
  private finishedCallbacks: (() => void)[] | null = null;
  private routeLabel = 'unmatched';
  private routeWebSocket: WebSocketRouteLimits | undefined;
  private surface: Surface = 'compat';
  /** Set when shutdown cancelled this request (its grace period ran out): it is answered 503, never blamed on the client. */
  private cancelledByShutdown = false;

  constructor(
    private readonly server: ServerState,
    res: uWS.HttpResponse,
    head: RequestHead,
    /** Set for a WebSocket upgrade request (websocket-sessions.ts): a 'duplex' result then upgrades. */
    private readonly upgradeVia: UpgradeVia | null = null,
  ) {
    this.rawMethod = head.method;
    this.method = (head.method === 'HEAD' ? 'GET' : head.method) as HttpMethod;
    this.headOnly = head.method === 'HEAD';
    this.path = head.path;
    this.rawQuery = head.query;
    this.headers = head.headers;
    this.framingError = head.framingError;
    this.sink = new ResponseSink(res, server.options.streamStallTimeoutMs);
    this.responseHeaders = { 'x-request-id': this.requestId, ...server.baseHeaders };
    // One closure per request for each uWS callback is unavoidable: uWS calls them with no context.
    res.onAborted(() => this.onAborted());
    if (head.hasBody && !head.framingError) {
      this.queue = this.newQueue();
      res.onData((chunk, isLast) => this.onData(chunk, isLast));
    }
  }

  /** Starts handling; never rejects (a failure here is logged, and costs this request at most). */
  start(): void {
    this.server.inFlight.add(this);
    this.server.options.metrics.inFlight.inc();
    if (this.framingError) this.refuseFraming(this.framingError);
    else void this.run();
  }

  // ApiRequest: the parts most handlers never touch are made on first use.
  /** The query string as received (without `?`): what a signature over the URL covers. */
  get queryString(): string {
    return this.rawQuery;
  }

  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.rawQuery));
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get body(): RequestBody {
    return (this.bodyReader ??= new ExchangeBody(this));
  }

  onFinished(callback: () => void): void {
    (this.finishedCallbacks ??= []).push(callback);
  }

  // WriteContext
  get baseHeaders(): Record<string, string> {
    return this.responseHeaders;
  }

  get serverOptions(): ServerState['options'] {
    return this.server.options;
  }

  closeConnection(): boolean {
    return !this.bodyComplete || this.server.draining;
  }

  mustCloseConnection(): boolean {
    return !this.bodyComplete || this.framingError !== null;
  }

  onStreamError(err: unknown): void {
    this.logFailure(err, 'error after the response started');
  }

  /** Completes the upgrade for a 'duplex' result of an upgrade request (status 101 in the access log). */
  upgrade(result: DuplexResult): boolean {
    // RFC 6455 §4.1: a handshake says `Connection: Upgrade`. uWS ends a `Connection: close` request's
    // socket right after the 101, so such a request gets the plain-HTTP answer (426) instead.
    const via = this.upgradeVia;
    if (!via || !hasUpgradeToken(this.headers.connection)) return false;
    // uWS chose the behaviour (and so the message bound) by its own pattern matching: it must be the route's.
    if (via.route !== this.routeWebSocket) throw new Error(`the upgrade to ${this.routeLabel} came through the uWS behaviour of another route`);
    const preAuthPlace = result.preAuth ? via.sessions.admitPreAuth(this.sink.remoteAddress(), this.routeLabel) : null;
    const data: UpgradeData = { requestId: this.requestId, route: this.routeLabel, result, peer: null, preAuthPlace };
    const { headers } = this;
    const upgraded = this.sink.upgrade(
      { ...this.responseHeaders, ...result.headers },
      data,
      headers['sec-websocket-key'] ?? '',
      result.protocol ?? '',
      headers['sec-websocket-extensions'] ?? '',
      via.context,
    );
    if (!upgraded) preAuthPlace?.(); // the client left first: no socket holds the place
    return true;
  }

  /** Cancels the handler's work: the server's grace period for shutdown is over. */
  cancel(reason: Error): void {
    this.cancelledByShutdown = true;
    this.abort.abort(reason);
  }

  /** The request body's queue, made empty and ended for a request that has none. */
  bodyQueue(): BodyQueue {
    if (!this.queue) {
      this.queue = this.newQueue();
      this.queue.end();
      if (this.sink.isAborted) this.queue.fail(new Error('client disconnected'));
    }
    return this.queue;
  }

  private get bodyComplete(): boolean {
    return this.queue === null || this.queue.complete;
  }

  private newQueue(): BodyQueue {
    const sink = this.sink;
    // Pausing and resuming go through the sink: after the response ended they must not touch `res`.
    return new BodyQueue(
      () => sink.pauseSocket(),
      (bodyEnded) => sink.resumeSocket(bodyEnded),
    );
  }

  private onAborted(): void {
    try {
      this.sink.markAborted();
      this.queue?.fail(new Error('client disconnected'));
      this.abort.abort(new Error('client disconnected'));
    } catch (err) {
      this.server.options.logger.error({ err }, 'onAborted threw');
    }
  }

  private onData(chunk: ArrayBuffer, isLast: boolean): void {
    try {
      this.queue!.push(chunk, isLast);
    } catch (err) {
      this.server.options.logger.error({ err }, 'onData threw');
    }
  }

  private async run(): Promise<void> {
    try {
      try {
        await this.serve();
      } catch (err) {
        if (this.sink.isAborted) return;
        if (!(err instanceof ApiError)) this.logFailure(err, 'request failed');
        if (this.sink.hasStarted) this.sink.end(true);
        else if (this.cancelledByShutdown) {
          // Whatever the cancelled work threw (an abort from the decoder or the model), the cause is the
          // shutdown: a retryable 503, at once (the sockets close shortly, so the rest of a body is not read).
          this.sendError(shuttingDownError());
        } else {
          if (!this.bodyComplete) await this.settleBody().catch(ignore);
          this.sendError(toApiError(err));
        }
      } finally {
        this.finish();
      }
    } catch (err) {
      this.server.options.logger.error({ requestId: this.requestId, err }, 'request handling threw');
    }
  }

  /**
   * A request whose length a proxy could read differently (request-head.ts): 400 and the connection closed
   * now, synchronously, before uWS parses what follows it on the connection (ResponseSink.answerAndClose).
   */
  private refuseFraming(reason: string): void {
    const err = new ApiError('malformed_request', reason);
    this.sink.answerAndClose(err.status, { ...this.responseHeaders, 'content-type': 'application/json' }, JSON.stringify(err.toEnvelope()));
    this.finish();
  }

  private async serve(): Promise<void> {
    const { method, path, server } = this;
    const raw = this.rawMethod;
    if (!server.isKnownMethod(raw)) throw new ApiError('method_not_allowed', `Method ${raw} is not supported.`);
    if (raw === 'OPTIONS') {
      this.routeLabel = 'preflight';
      const preflight = preflightHeaders(server.options.corsOrigin, this.headers['access-control-request-headers']);
      this.sink.sendWhole(204, { ...this.responseHeaders, ...preflight }, '', this.closeConnection());
      return;
    }
    // Stopping: a request on a connection accepted before the listener closed is served (its connection is
    // closed after the answer), but not a WebSocket upgrade, whose session would be closed at once.
    if (server.refusing || (server.draining && this.upgradeVia)) throw shuttingDownError();
    const match = server.router.match(method, path);
    if (match.kind === 'not_found') {
      const asset = server.options.site?.get(path);
      if (asset && method === 'GET') return this.serveStatic(asset);
      if (asset) throw new ApiError('method_not_allowed', `Method ${raw} is not allowed on ${path}; use GET, HEAD.`, { headers: { allow: 'GET, HEAD' } });
      throw new ApiError('unknown_endpoint', `Unrecognized request URL (${raw} ${path}).`);
    }
    if (match.kind === 'wrong_method') {
      throw new ApiError('method_not_allowed', `Method ${raw} is not allowed on ${path}; use ${match.allowed.join(', ')}.`, {
        headers: { allow: match.allowed.join(', ') },
      });
    }
    this.routeLabel = match.route.pattern;
    this.routeWebSocket = match.route.websocket;
    this.surface = match.route.surface;
    this.params = match.params;
    const result = await match.route.handle(this);
    if (result.onDelivered) return this.deliverCharged(result, result.onDelivered);
    // Answering while the client is still uploading: read (and drop) the rest first, within bounds.
    if (!this.bodyComplete) await this.settleBody();
    if (this.sink.isAborted) return;
    // Whole bodies (the common case) are written at once, without a promise for the write.
    if (!writeWhole(this, result)) await writeResult(this, result);
  }

  /**
   * A result whose charge waits for its delivery: written with confirmation, then its charge is settled
   * (delivered) or released — exactly once, however the writing ends, and before the request is finished
   * (so a graceful shutdown, which waits for requests in flight, waits for the charge too).
   */
  private async deliverCharged(result: ApiResult, onDelivered: (delivered: boolean) => Promise<void>): Promise<void> {
    let told = false;
    const tell = async (delivered: boolean) => {
      if (told) return;
      told = true;
      await onDelivered(delivered).catch((err: unknown) =>
        this.server.options.logger.error({ requestId: this.requestId, err }, 'settling a charge on delivery failed'),
      );
    };
    try {
      if (!this.bodyComplete) await this.settleBody();
      if (this.sink.isAborted) return;
      await writeDelivered(this, result, tell);
    } finally {
      await tell(false); // every path that did not get as far as telling: not delivered
    }
  }

  /** A file of the static site (static-site.ts): whole, from memory. */
  private async serveStatic(asset: StaticAsset): Promise<void> {
    this.routeLabel = 'static';
    if (!this.bodyComplete) await this.settleBody();
    if (this.sink.isAborted) return;
    const response = staticResponse(asset, this.headers);
    // A 304 reports the length the 200 would have had (RFC 9110 §8.6) and sends no body.
    this.sink.sendWhole(
      response.status,
      { ...this.responseHeaders, ...response.headers },
      response.body,
      this.closeConnection(),
      this.headOnly || response.status === 304,
    );
  }

  private async settleBody(): Promise<void> {
    if (this.queue && !this.queue.complete && !this.sink.isAborted) {
      await this.queue.drainRest(this.server.drainLimitBytes, this.server.drainTimeoutMs);
    }
  }

  private sendError(err: ApiError): void {
    writeError(this, err, this.surface === 'native' ? err.toNativeBody() : err.toEnvelope());
  }

  private logFailure(err: unknown, what: string): void {
    if (this.abort.aborted) return; // a client that left is expected, not an error
    // What the client caused (a 4xx, e.g. audio that fails to decode midway) is not a server error.
    const mapped = toApiError(err);
    const { logger } = this.server.options;
    if (mapped.status < 500) logger.info({ requestId: this.requestId, code: mapped.code, err: mapped.message }, what);
    // A refusal for lack of capacity (503 + Retry-After: a model at capacity or still loading while the server
    // starts, a database restarting) is something a retry gets past: warn, one line, never error with a stack.
    else if (isCapacityRefusal(err) || mapped.status === 503)
      logger.warn({ requestId: this.requestId, code: mapped.code, err: err instanceof Error ? err.message : mapped.message }, what);
    else logger.error({ requestId: this.requestId, err: err instanceof ApiError ? err.message : err }, what);
  }

  private finish(): void {
    const { server, sink } = this;
    const { logger, metrics } = server.options;
    server.inFlight.delete(this);
    if (this.finishedCallbacks) {
      for (const callback of this.finishedCallbacks) {
        try {
          callback();
        } catch (err) {
          logger.error({ err }, 'onFinished threw');
        }
      }
    }
    try {
      if (!this.bodyComplete) this.queue!.discard();
      const status = sink.isAborted && !sink.hasStarted ? 499 : sink.statusCode;
      const ms = performance.now() - this.started;
      // Label values stay bounded: a made-up method is counted as `other`, never as a new series.
      const methodLabel = server.isKnownMethod(this.rawMethod) ? this.rawMethod : 'other';
      metrics.observe(methodLabel, this.routeLabel, status, ms / 1000);
      metrics.inFlight.dec();
      if (server.accessLog.isLevelEnabled('info')) {
        server.accessLog.info(
          {
            requestId: this.requestId,
            method: this.rawMethod,
            route: this.routeLabel,
            path: this.path,
            status,
            ms: Math.round(ms * 10) / 10,
            aborted: sink.isAborted,
          },
          'request',
        );
      }
    } catch (err) {
      logger.error({ err }, 'request finish threw');
    }
    server.afterFinish();
  }
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;
const ignore = () => {};

/** The answer to a request the server cannot take or finish because it is stopping (README: 503 + Retry-After). */
function shuttingDownError(): ApiError {
  return new ApiError('service_unavailable', 'The server is shutting down; retry shortly.', { headers: { 'retry-after': '1' } });
}

/** The request body as a handler reads it: raw chunks, JSON or multipart, all from the exchange's queue. */
class ExchangeBody implements RequestBody {
  constructor(private readonly exchange: Exchange) {}

  chunks(): AsyncIterable<Uint8Array> {
    return this.exchange.bodyQueue();
  }

  json(): Promise<unknown> {
    const { exchange } = this;
    return readJsonBody(exchange.headers['content-type'], exchange.bodyQueue(), exchange.serverOptions.maxJsonBodyBytes);
  }

  multipart(): Promise<MultipartForm> {
    const { exchange } = this;
    const options = exchange.serverOptions;
    return parseMultipart(
      exchange.headers['content-type'] ?? '',
      exchange.bodyQueue(),
      {
        maxFileBytes: options.maxUploadBytes,
        maxFieldBytes: 64 * 1024,
        maxFields: 100,
        maxFiles: 4,
        spillThresholdBytes: options.uploadSpillBytes,
        tmpDir: options.tmpDir,
      },
      exchange.signal,
    );
  }
}

/** Whether a Connection header lists the `upgrade` token (comma-separated, any case). */
function hasUpgradeToken(connection: string | undefined): boolean {
  return connection !== undefined && connection.split(',').some((token) => token.trim().toLowerCase() === 'upgrade');
}
