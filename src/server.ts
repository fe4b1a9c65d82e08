/**
 * Builds a whole Kuma server from a config: store, ledger, model catalog, API routes and the uWS
 * transport. `main.ts` runs it as a process; tests start it in-process on an ephemeral port with an
 * injected clock, log destination or extra routes.
 */
import type { DestinationStream } from 'pino';
import type { Config } from './config/config.js';
import { createLogger, type Logger } from './observability/logger.js';
import { Metrics } from './observability/metrics.js';
import { openSqliteStore } from './store/sqlite-store.js';
import type { Store } from './store/store.js';
import { Ledger } from './billing/ledger.js';
import { ModelCatalog, type Clock } from './api/model-catalog.js';
import { createApi } from './api/create-api.js';
import type { RouteDef } from './api/types.js';
import { startHttpServer } from './transport/http-server.js';

export const KUMA_VERSION = '0.1.0';

export interface StartOptions {
  config: Config;
  clock?: Clock;
  logDestination?: DestinationStream;
  /** Use this store instead of opening config.dbPath (the caller closes it). */
  store?: Store;
  extraRoutes?: (deps: { store: Store; ledger: Ledger; catalog: ModelCatalog }) => RouteDef[];
}

export interface KumaServer {
  port: number;
  store: Store;
  ledger: Ledger;
  logger: Logger;
  metrics: Metrics;
  /** Graceful: stop accepting, finish in-flight work within the config's grace period, close the store. */
  close(): Promise<void>;
}

export async function startKuma(options: StartOptions): Promise<KumaServer> {
  const { config } = options;
  const logger = createLogger(config.logLevel, options.logDestination);
  const metrics = new Metrics();
  const ownsStore = !options.store;
  const store = options.store ?? (await openSqliteStore(config.dbPath));
  const ledger = new Ledger(store, config.prices);
  const catalog = new ModelCatalog(config.vendor, config.retirementDate, options.clock);

  const { routes } = createApi({
    store,
    ledger,
    catalog,
    metrics,
    logger,
    vendor: config.vendor,
    version: KUMA_VERSION,
    readinessChecks: [async () => ({ name: 'store', ready: (await store.countAccounts()) >= 0 })],
    extraRoutes: options.extraRoutes?.({ store, ledger, catalog }),
  });

  const http = await startHttpServer({
    host: config.host,
    port: config.port,
    routes,
    logger,
    metrics,
    corsOrigin: config.corsOrigin,
    maxJsonBodyBytes: config.maxJsonBodyBytes,
    maxUploadBytes: config.maxUploadBytes,
    uploadSpillBytes: config.uploadSpillBytes,
    tmpDir: config.tmpDir,
    streamStallTimeoutMs: config.streamStallTimeoutMs,
  });
  logger.info({ port: http.port, host: config.host }, 'listening');

  let closing: Promise<void> | null = null;
  return {
    port: http.port,
    store,
    ledger,
    logger,
    metrics,
    close: () =>
      (closing ??= (async () => {
        await http.close(config.shutdownGraceMs);
        if (ownsStore) await store.close();
        logger.info('stopped');
        logger.flush();
      })()),
  };
}
