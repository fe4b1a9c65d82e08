/**
 * The uWebSockets.js HTTP server: one catch-all handler that routes, builds the transport-neutral
 * ApiRequest (headers, query, a backpressured body), runs the handler and writes its result. Also owns
 * x-request-id, CORS, access logs, request metrics and graceful shutdown. This folder is the only code
 * that imports uWebSockets.js.
 */
import { performance } from 'node:perf_hooks';
import uWS from 'uWebSockets.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { ApiError, toApiError } from '../api/errors.js';
import type { ApiRequest, HttpMethod, HttpRoute, Surface } from '../api/types.js';
import { BodyQueue } from './body-queue.js';
import { corsHeaders, preflightHeaders } from './cors.js';
import { readJsonBody } from './json-body.js';
import { parseMultipart } from './multipart.js';
import { ResponseSink } from './response-sink.js';
import { writeError, writeResult, type WriteContext } from './result-writer.js';
import { Router } from './router.js';
import { LazyAbort } from './lazy-abort.js';
import { newRequestId } from './request-id.js';

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
}

export interface RunningHttpServer {
  port: number;
  /** Requests being handled now. */
  inFlight(): number;
  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then closes every socket. */
  close(graceMs: number): Promise<void>;
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
 * Request framing that a proxy in front of us could read differently (request smuggling): more than one
 * Content-Length with different values, or one that is not a plain number. (uWS itself refuses a request
 * that has both Content-Length and Transfer-Encoding, with its own 400.) Returns what is wrong, or null.
 */
function ambiguousFraming(contentLengths: string[]): string | null {
  if (contentLengths.some((v) => !/^\d+$/.test(v.trim()))) return 'Content-Length must be a single non-negative integer.';
  if (new Set(contentLengths.map((v) => v.trim().replace(/^0+(?=\d)/, ''))).size > 1) return 'Conflicting Content-Length headers.';
  return null;
}

/** Runs a uWS callback so that a throw is logged instead of ending the process (uWS rethrows into Node). */
function guarded(logger: Logger, what: string, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    logger.error({ err }, `${what} threw`);
  }
}

export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const router = new Router(options.routes);
  const drainLimitBytes = options.drainLimitBytes ?? Math.max(MIN_DRAIN_LIMIT_BYTES, 4 * options.maxUploadBytes);
  const drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  const app = uWS.App();
  const inFlight = new Set<LazyAbort>();
  // The same for every response: built once, copied into each response's headers.
  const cors = corsHeaders(options.corsOrigin);
  let draining = false;
  let idleWaiter: (() => void) | null = null;

  const onRequest = (res: uWS.HttpResponse, req: uWS.HttpRequest) => {
    const started = performance.now();
    // uWS's req lives only until this callback returns: read everything from it now.
    // Methods are case-sensitive (RFC 9110 §9.1): `get` is not GET.
    const method = req.getCaseSensitiveMethod();
    const path = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const headers: Record<string, string> = {};
    const contentLengths: string[] = [];
    req.forEach((name, value) => {
      if (name === 'content-length') contentLengths.push(value);
      headers[name] = value;
    });
    const requestId = newRequestId();

    const sink = new ResponseSink(res, options.streamStallTimeoutMs);
    const controller = new LazyAbort();
    // Pausing and resuming go through the sink: after the response ended they must not touch `res`.
    const body = new BodyQueue(() => sink.pauseSocket(), () => sink.resumeSocket());
    res.onAborted(() =>
      guarded(options.logger, 'onAborted', () => {
        sink.markAborted();
        body.fail(new Error('client disconnected'));
        controller.abort(new Error('client disconnected'));
      }),
    );
    const framingError = ambiguousFraming(contentLengths);
    const hasBody = Number(headers['content-length'] ?? 0) > 0 || headers['transfer-encoding'] !== undefined;
    if (hasBody && !framingError) res.onData((chunk, isLast) => guarded(options.logger, 'onData', () => body.push(chunk, isLast)));
    else body.end();

    const baseHeaders: Record<string, string> = { 'x-request-id': requestId, ...cors };
    const ctx: WriteContext = {
      sink,
      baseHeaders,
      closeConnection: () => !body.complete || draining || framingError !== null,
      headOnly: method === 'HEAD',
      onStreamError: (err) => logFailure(err, 'error after the response started'),
    };
    const logFailure = (err: unknown, what: string) => {
      if (controller.aborted) return; // a client that left is expected, not an error
      // What the client caused (a 4xx, e.g. audio that fails to decode midway) is not a server error.
      const mapped = toApiError(err);
      if (mapped.status < 500) options.logger.info({ requestId, code: mapped.code, err: mapped.message }, what);
      else options.logger.error({ requestId, err: err instanceof ApiError ? err.message : err }, what);
    };

    let routeLabel = 'unmatched';
    let surface: Surface = 'compat';
    // Answering while the client is still uploading: read (and drop) the rest first, within bounds.
    const settleBody = async () => {
      if (!body.complete && !sink.isAborted) await body.drainRest(drainLimitBytes, drainTimeoutMs);
    };
    // Callbacks of whoever must know that this response is over (a rate-limit place to give back).
    let onFinished: (() => void)[] | null = null;
    const finish = () => {
      inFlight.delete(controller);
      if (onFinished) for (const callback of onFinished) guarded(options.logger, 'onFinished', callback);
      if (!body.complete) body.discard();
      const status = sink.isAborted && !sink.hasStarted ? 499 : sink.statusCode;
      const ms = performance.now() - started;
      // Label values stay bounded: a made-up method is counted as `other`, never as a new series.
      options.metrics.observe(METHODS.has(method) ? method : 'other', routeLabel, status, ms / 1000);
      options.metrics.inFlight.dec();
      options.logger.info({ requestId, method, route: routeLabel, path, status, ms: Math.round(ms * 10) / 10, aborted: sink.isAborted }, 'request');
      if (draining && inFlight.size === 0) idleWaiter?.();
    };

    inFlight.add(controller);
    options.metrics.inFlight.inc();
    const sendError = (err: ApiError) =>
      writeError(ctx, err, surface === 'native' ? { detail: err.message } : err.toEnvelope());

    void (async () => {
      try {
        if (framingError) throw new ApiError('malformed_request', framingError);
        if (!METHODS.has(method)) throw new ApiError('method_not_allowed', `Method ${method} is not supported.`);
        if (method === 'OPTIONS') {
          routeLabel = 'preflight';
          sink.sendWhole(204, { ...baseHeaders, ...preflightHeaders(options.corsOrigin, headers['access-control-request-headers']) }, '', ctx.closeConnection());
          return;
        }
        if (draining) {
          throw new ApiError('service_unavailable', 'The server is shutting down; retry shortly.', { headers: { 'retry-after': '1' } });
        }
        const match = router.match(method, path);
        if (match.kind === 'not_found') {
          throw new ApiError('unknown_endpoint', `Unrecognized request URL (${method} ${path}).`);
        }
        if (match.kind === 'wrong_method') {
          throw new ApiError('method_not_allowed', `Method ${method} is not allowed on ${path}; use ${match.allowed.join(', ')}.`, {
            headers: { allow: match.allowed.join(', ') },
          });
        }
        routeLabel = match.route.pattern;
        surface = match.route.surface;
        let query: URLSearchParams | undefined;
        const apiRequest: ApiRequest = {
          method: (method === 'HEAD' ? 'GET' : method) as HttpMethod,
          path,
          params: match.params,
          // Parsed when a handler asks: most never do.
          get query() {
            return (query ??= new URLSearchParams(rawQuery));
          },
          headers,
          requestId,
          get signal() {
            return controller.signal;
          },
          // The same object the writers spread into every response: headers set here reach any answer.
          responseHeaders: baseHeaders,
          onFinished: (callback) => void (onFinished ??= []).push(callback),
          body: {
            chunks: () => body,
            json: () => readJsonBody(headers['content-type'], body, options.maxJsonBodyBytes),
            multipart: () =>
              parseMultipart(headers['content-type'] ?? '', body, {
                maxFileBytes: options.maxUploadBytes,
                maxFieldBytes: 64 * 1024,
                maxFields: 100,
                maxFiles: 4,
                spillThresholdBytes: options.uploadSpillBytes,
                tmpDir: options.tmpDir,
              }, controller.signal),
          },
        };
        const result = await match.route.handle(apiRequest);
        await settleBody();
        if (sink.isAborted) return;
        await writeResult(ctx, result);
      } catch (err) {
        if (sink.isAborted) return;
        if (!(err instanceof ApiError)) logFailure(err, 'request failed');
        if (sink.hasStarted) sink.end(true);
        else {
          if (!framingError) await settleBody().catch(() => {});
          sendError(toApiError(err));
        }
      } finally {
        guarded(options.logger, 'request finish', finish);
      }
    })().catch((err) => options.logger.error({ requestId, err }, 'request handling threw'));
  };
  app.any('/*', (res, req) => {
    try {
      onRequest(res, req);
    } catch (err) {
      // A bug in the code above must cost one connection, never the process.
      options.logger.error({ err }, 'request setup threw');
      try {
        res.close();
      } catch {
        // already answered or aborted
      }
    }
  });

  const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    app.listen(options.host, options.port, (token) => (token ? resolve(token) : reject(new Error(`Cannot listen on ${options.host}:${options.port}`))));
  });
  const port = uWS.us_socket_local_port(listenSocket);

  return {
    port,
    inFlight: () => inFlight.size,
    async close(graceMs: number) {
      if (draining) return;
      draining = true;
      uWS.us_listen_socket_close(listenSocket);
      if (inFlight.size > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, graceMs);
          idleWaiter = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      // Past the grace period, remaining work is cancelled before the sockets go.
      for (const controller of inFlight) controller.abort(new Error('server shutting down'));
      app.close();
    },
  };
}
