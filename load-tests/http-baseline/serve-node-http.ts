/**
 * Child-process entry for the http-baseline benchmark: the baseline server. It builds the SAME routes as
 * Kuma (createApi with the same store, ledger, catalog, metrics and logger, as in src/server.ts) and the
 * same Router, but serves them with `node:http` instead of uWebSockets.js. The per-request work mirrors
 * src/transport/http-server.ts (request id, AbortSignal, routing, metrics, access-log call, CORS and
 * x-request-id headers, error envelopes), so the benchmark compares transports, not handlers.
 * Prints one JSON line `{"port":N,"pid":N}` on stdout once listening.
 *
 * Usage (from run.ts): node --import tsx serve-node-http.ts <dbPath> <tmpDir>
 */
import { fstatSync } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../../src/config/config.js';
import { createApi } from '../../src/api/create-api.js';
import { ApiError, toApiError } from '../../src/api/errors.js';
import { ModelCatalog } from '../../src/api/model-catalog.js';
import type { ApiRequest, ApiResult, HttpMethod, RequestBody } from '../../src/api/types.js';
import { Ledger } from '../../src/billing/ledger.js';
import { accessLogger, createLogger } from '../../src/observability/logger.js';
import { Metrics } from '../../src/observability/metrics.js';
import { KUMA_VERSION } from '../../src/server.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { corsHeaders } from '../../src/transport/cors.js';
import { DecoderPool } from '../../src/codecs/decode/decoder-pool.js';
import { SpeechEncoders } from '../../src/codecs/encoders/speech-encoders.js';
import { Router } from '../../src/transport/router.js';
import { LazyAbort } from '../../src/transport/lazy-abort.js';
import { newRequestId } from '../../src/transport/request-id.js';
import { KeyCache, withKeyCacheInvalidation } from '../../src/auth/key-cache.js';
import { RateLimiter } from '../../src/limits/rate-limiter.js';
import { limitDefaultsOf } from '../../src/limits/limits.js';
import { BENCH_LOG_LEVEL, benchLogDestination } from './bench-log.js';

const [dbPath, tmpDir] = process.argv.slice(2);
if (!dbPath || !tmpDir) {
  process.stderr.write('usage: serve-node-http.ts <dbPath> <tmpDir>\n');
  process.exit(2);
}

// Same config and dependency wiring as startKuma, so both servers answer from identical objects.
const config = loadConfig({}, { host: '127.0.0.1', port: 0, dbPath, tmpDir, logLevel: BENCH_LOG_LEVEL });
const logger = createLogger(config.logLevel, benchLogDestination());
const accessLog = accessLogger(logger); // as the uWS transport writes its access log
const metrics = new Metrics();
const rawStore = await openSqliteStore(config.dbPath);
// The same key cache and limiter as startKuma: the authenticated path is the same code on both servers.
const keys = new KeyCache(rawStore, { ttlMs: config.authCacheTtlMs });
const store = withKeyCacheInvalidation(rawStore, keys);
const limiter = config.rateLimits ? new RateLimiter() : null;
const ledger = new Ledger(store, config.prices);
const catalog = new ModelCatalog(config.vendor, config.retirementDate);
const { routes } = createApi({
  store,
  keys,
  limiter,
  limitDefaults: limitDefaultsOf(config),
  ledger,
  catalog,
  metrics,
  logger,
  vendor: config.vendor,
  version: KUMA_VERSION,
  readinessChecks: [async () => ({ name: 'store', ready: (await store.countAccounts()) >= 0 })],
  // No models and no uploads: the benchmark measures the transport on GET /models.
  engines: null,
  decoder: new DecoderPool({ size: 1 }),
  encoders: new SpeechEncoders({ threads: 0, aac: {} }), // nothing is encoded: no models
  maxAudioSeconds: config.maxAudioSeconds,
});
const router = new Router(routes);

// This benchmark is GET-only: a handler that reads a body here is a bug in the benchmark, not a case to serve.
const noBody: RequestBody = {
  chunks: () => {
    throw new Error('the node:http baseline does not read request bodies');
  },
  json: () => Promise.reject(new Error('the node:http baseline does not read request bodies')),
  multipart: () => Promise.reject(new Error('the node:http baseline does not read request bodies')),
};

/** Node joins repeated headers into arrays (set-cookie) or strings; uWS hands over each value as a string. */
function flatHeaders(raw: http.IncomingHttpHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function send(res: http.ServerResponse, status: number, headers: Record<string, string>, body: string, headOnly: boolean): void {
  // One writeHead + end with a known length: the same shape as uWS's sendWhole (no chunked encoding).
  res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
  res.end(headOnly ? undefined : body);
}

function writeResult(res: http.ServerResponse, result: ApiResult, baseHeaders: Record<string, string>, headOnly: boolean): void {
  const status = result.status ?? 200;
  const headers = { ...baseHeaders, ...result.headers };
  if (result.kind === 'json') send(res, status, { ...headers, 'content-type': 'application/json' }, JSON.stringify(result.body), headOnly);
  else if (result.kind === 'text') send(res, status, { ...headers, 'content-type': result.contentType }, result.body, headOnly);
  // Streams are out of scope for a GET /models benchmark; refuse loudly rather than measure something else.
  else throw new Error(`the node:http baseline does not stream (${result.kind})`);
}

const cors = corsHeaders(config.corsOrigin);
const server = http.createServer((req, res) => {
  const started = performance.now();
  const method = (req.method ?? 'GET').toUpperCase();
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const rawQuery = q === -1 ? '' : url.slice(q + 1);
  const headers = flatHeaders(req.headers);
  // The same request-id pool, lazy abort signal and lazy query as the uWS transport (src/transport/).
  const requestId = newRequestId();
  const controller = new LazyAbort();
  // Like uWS's onAborted: the signal fires only when the client leaves before the response is done.
  res.on('close', () => {
    if (!res.writableFinished) controller.abort(new Error('client disconnected'));
  });
  const baseHeaders: Record<string, string> = { 'x-request-id': requestId, ...cors };
  let onFinished = null as (() => void)[] | null; // `as`: assigned in a closure TS cannot follow
  const headOnly = method === 'HEAD';
  let routeLabel = 'unmatched';
  metrics.inFlight.inc();

  void (async () => {
    try {
      const match = router.match(method, path);
      if (match.kind === 'not_found') throw new ApiError('unknown_endpoint', `Unrecognized request URL (${method} ${path}).`);
      if (match.kind === 'wrong_method') {
        throw new ApiError('method_not_allowed', `Method ${method} is not allowed on ${path}; use ${match.allowed.join(', ')}.`, {
          headers: { allow: match.allowed.join(', ') },
        });
      }
      routeLabel = match.route.pattern;
      let query: URLSearchParams | undefined;
      const apiRequest: ApiRequest = {
        method: (headOnly ? 'GET' : method) as HttpMethod,
        path,
        params: match.params,
        get query() {
          return (query ??= new URLSearchParams(rawQuery));
        },
        queryString: rawQuery,
        headers,
        requestId,
        get signal() {
          return controller.signal;
        },
        body: noBody,
        responseHeaders: baseHeaders,
        onFinished: (callback) => void (onFinished ??= []).push(callback),
      };
      const result = await match.route.handle(apiRequest);
      if (controller.aborted) return;
      writeResult(res, result, baseHeaders, headOnly);
    } catch (err) {
      if (controller.aborted) return;
      if (!(err instanceof ApiError)) logger.error({ requestId, err }, 'request failed');
      const apiError = toApiError(err);
      if (res.headersSent) res.destroy();
      else
        send(
          res,
          apiError.status,
          { ...baseHeaders, ...apiError.headers, 'content-type': 'application/json' },
          JSON.stringify(apiError.toEnvelope()),
          headOnly,
        );
    } finally {
      // Same bookkeeping as the uWS transport, so neither side skips work the other does.
      const status = controller.aborted && !res.headersSent ? 499 : res.statusCode;
      const ms = performance.now() - started;
      metrics.observe(method, routeLabel, status, ms / 1000);
      metrics.inFlight.dec();
      if (onFinished) for (const callback of onFinished) callback();
      accessLog.info({ requestId, method, route: routeLabel, path, status, ms: Math.round(ms * 10) / 10, aborted: controller.aborted }, 'request');
    }
  })();
});

await new Promise<void>((resolve, reject) => {
  server.once('error', reject);
  server.listen(0, config.host, () => resolve());
});
const address = server.address();
if (!address || typeof address === 'string') throw new Error('node:http server has no TCP address');
process.stdout.write(`${JSON.stringify({ port: address.port, pid: process.pid })}\n`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.closeAllConnections();
  server.close(() => void store.close().finally(() => process.exit(0)));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// Exit with the orchestrator: its end of our stdin closes when it goes, however it goes.
// Only when stdin is a pipe (run.ts spawns us so): started by hand from a shell, stdin may be /dev/null.
const stdinStat = fstatSync(0);
if (stdinStat.isFIFO() || stdinStat.isSocket()) {
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.stdin.resume();
}
