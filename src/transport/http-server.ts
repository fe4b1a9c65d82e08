/**
 * The uWebSockets.js HTTP server: one catch-all handler that routes, builds the transport-neutral
 * ApiRequest (headers, query, a backpressured body), runs the handler and writes its result. Also owns
 * x-request-id, CORS, access logs, request metrics and graceful shutdown. This folder is the only code
 * that imports uWebSockets.js.
 */
import { randomBytes } from 'node:crypto';
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
}

export interface RunningHttpServer {
  port: number;
  /** Requests being handled now. */
  inFlight(): number;
  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then closes every socket. */
  close(graceMs: number): Promise<void>;
}

const METHODS = new Set<string>(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const router = new Router(options.routes);
  const app = uWS.App();
  const inFlight = new Set<AbortController>();
  let draining = false;
  let idleWaiter: (() => void) | null = null;

  app.any('/*', (res, req) => {
    const started = performance.now();
    // uWS's req lives only until this callback returns: read everything from it now.
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const path = req.getUrl();
    const query = new URLSearchParams(req.getQuery() ?? '');
    const headers: Record<string, string> = {};
    req.forEach((name, value) => (headers[name] = value));
    const requestId = `req_${randomBytes(12).toString('hex')}`;

    const sink = new ResponseSink(res, options.streamStallTimeoutMs);
    const controller = new AbortController();
    const body = new BodyQueue(() => res.pause(), () => res.resume());
    res.onAborted(() => {
      sink.markAborted();
      body.fail(new Error('client disconnected'));
      controller.abort(new Error('client disconnected'));
    });
    const hasBody = Number(headers['content-length'] ?? 0) > 0 || headers['transfer-encoding'] !== undefined;
    if (hasBody) res.onData((chunk, isLast) => body.push(chunk, isLast));
    else body.end();

    const baseHeaders = { 'x-request-id': requestId, ...corsHeaders(options.corsOrigin) };
    const ctx: WriteContext = {
      sink,
      baseHeaders,
      closeConnection: () => !body.complete || draining,
      headOnly: method === 'HEAD',
      onStreamError: (err) => logFailure(err, 'error after the response started'),
    };
    const logFailure = (err: unknown, what: string) => {
      if (controller.signal.aborted) return; // a client that left is expected, not an error
      options.logger.error({ requestId, err: err instanceof ApiError ? err.message : err }, what);
    };

    let routeLabel = 'unmatched';
    let surface: Surface = 'compat';
    const finish = () => {
      inFlight.delete(controller);
      if (!body.complete) body.discard();
      const status = sink.isAborted && !sink.hasStarted ? 499 : sink.statusCode;
      const ms = performance.now() - started;
      options.metrics.observe(method, routeLabel, status, ms / 1000);
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
        const apiRequest: ApiRequest = {
          method: (method === 'HEAD' ? 'GET' : method) as HttpMethod,
          path,
          params: match.params,
          query,
          headers,
          requestId,
          signal: controller.signal,
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
        if (sink.isAborted) return;
        await writeResult(ctx, result);
      } catch (err) {
        if (sink.isAborted) return;
        if (!(err instanceof ApiError)) logFailure(err, 'request failed');
        if (sink.hasStarted) sink.end(true);
        else sendError(toApiError(err));
      } finally {
        finish();
      }
    })();
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
