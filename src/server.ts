/**
 * Builds a whole Kuma server from a config: store, ledger, model catalog, API routes and the uWS
 * transport. `main.ts` runs it as a process; tests start it in-process on an ephemeral port with an
 * injected clock, log destination or extra routes.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DestinationStream } from 'pino';
import type { Config } from './config/config.js';
import { checkConfigFiles } from './config/config-files.js';
import { createLogger, type Logger } from './observability/logger.js';
import { Metrics } from './observability/metrics.js';
import { describeStoreLocation, openStore } from './store/open-store.js';
import type { Store } from './store/store.js';
import { Ledger } from './billing/ledger.js';
import { ModelCatalog, type Clock } from './api/model-catalog.js';
import { createApi } from './api/create-api.js';
import type { HttpRoute, RouteDef } from './api/types.js';
import { startHttpServer } from './transport/http-server.js';
import { EngineRegistry } from './engines/engine-registry.js';
import { onCpuOnly } from './engines/onnx/execution-providers.js';
import { DecoderPool } from './codecs/decode/decoder-pool.js';
import { startMemoryReducer } from './observability/memory-reducer.js';
import { defaultEncoderThreads } from './codecs/encode-pool/shared-pool.js';
import { SpeechEncoders } from './codecs/encoders/speech-encoders.js';
import { KeyCache, withKeyCacheInvalidation } from './auth/key-cache.js';
import { KeySessions, withRevocationEnding } from './auth/key-sessions.js';
import { StoreUnavailableError } from './store/store-errors.js';
import { RateLimiter } from './limits/rate-limiter.js';
import { limitDefaultsOf } from './limits/limits.js';
import { VadScheduler } from './realtime/vad/vad-scheduler.js';
import { watchCpuLoad } from './observability/cpu-load.js';
import { avoidIdleCompaction } from './observability/gc-pauses.js';
import { setupTelephony } from './telephony-wiring.js';
import { studioSite } from './studio/studio-assets.js';
import { TRANSCRIPTION_MODEL_ID, SPEECH_MODEL_ID, TRANSLATION_MODEL_ID } from './engines/model-ids.js';

export const KUMA_VERSION = '0.1.0';

export interface StartOptions {
  config: Config;
  clock?: Clock;
  logDestination?: DestinationStream;
  /** Use this store instead of opening the configured one (KUMA_DATABASE_URL or KUMA_DB_PATH; the caller closes it). */
  store?: Store;
  /** Use these engines instead of the config's manifest (the caller closes them); null = no models. */
  engines?: EngineRegistry | null;
  /** Clock of the rate limiter (ms since the epoch); tests inject one to refill buckets without waiting. */
  rateLimitClock?: () => number;
  /**
   * Listen only once the models are loaded and warm (a cluster worker: the others serve meanwhile, and a
   * worker answering "model still loading" would turn a rolling restart into refused requests). If a model
   * fails to load, it listens anyway and /readyz says why.
   */
  listenWhenWarm?: boolean;
  extraRoutes?: (deps: { store: Store; ledger: Ledger; catalog: ModelCatalog; engines: EngineRegistry | null }) => RouteDef[];
}

export interface KumaServer {
  port: number;
  store: Store;
  ledger: Ledger;
  logger: Logger;
  metrics: Metrics;
  engines: EngineRegistry | null;
  /** The pools that encode speech (encoder threads, ffmpeg for aac/fmp4), closed with the server. */
  encoders: SpeechEncoders;
  /** The route table the transport serves (every prefix mounted); the OpenAPI contract test compares it with the document. */
  routes: readonly HttpRoute[];
  /** Resolves when every model is loaded and warmed (rejects if one fails to load). */
  enginesReady: Promise<void>;
  /** The Asterisk AudioSocket listener's port; null when KUMA_AUDIOSOCKET_PORT is not set. */
  audioSocketPort: number | null;
  /** The per-key and per-account limiter; null when KUMA_RATE_LIMITS=off. */
  limiter: RateLimiter | null;
  /**
   * HTTP requests being handled now. A response's charge settles after its last bytes were delivered, and the
   * request is finished only then: at 0, every charge of the requests answered so far is recorded.
   */
  requestsInFlight(): number;
  /** Graceful: stop accepting, finish in-flight work within the config's grace period, close the store. */
  close(): Promise<void>;
}

export async function startKuma(options: StartOptions): Promise<KumaServer> {
  const { config } = options;
  // Before anything is opened or loaded: a file setting that cannot be used is refused at once, by name.
  checkConfigFiles(config);
  avoidIdleCompaction();
  const logger = createLogger(config.logLevel, options.logDestination);
  const metrics = new Metrics();
  const ownsStore = !options.store;
  const rawStore = options.store ?? (await openStore(config));
  const keys = new KeyCache(rawStore, { ttlMs: config.authCacheTtlMs });
  // Open sessions by key: a revocation ends them — this process's at once, another process's within one
  // sweep, every KUMA_AUTH_CACHE_TTL_MS (the bound new requests have), asking the store itself.
  const keySessions = new KeySessions(rawStore, {
    periodMs: config.authCacheTtlMs,
    onSweepError: (err) => logger.warn({ err: (err as Error).message }, 'checking open sessions for revoked keys failed; retried at the next sweep'),
    onEndError: (err) => logger.error({ err }, 'ending a session of a revoked key threw'),
  });
  // This process's own changes to keys and limits drop the cache at once; other processes' within its TTL.
  const store = withRevocationEnding(withKeyCacheInvalidation(rawStore, keys), keySessions);
  const limiter = config.rateLimits ? new RateLimiter(options.rateLimitClock) : null;
  // kuma_usage_units_total counts exactly what each settlement wrote to the ledger; the per-minute amount
  // limit counts the same quantities (seconds, characters, tokens), charged when the work settles.
  const ledger = new Ledger(store, config.prices, {
    onUsage: (records) => {
      for (const r of records) {
        metrics.usage.inc({ model: r.model, unit: r.unit }, r.quantity);
        limiter?.charge([r.accountId, r.keyId], r.quantity);
      }
    },
  });
  /** Set by close(): /readyz says not-ready from then on, while the node still serves (drainDelayMs). */
  let draining = false;
  const catalog = new ModelCatalog(config.vendor, config.retirementDate, options.clock);
  const ownsEngines = options.engines === undefined;
  const engines = ownsEngines ? await enginesFromConfig(config, catalog, logger) : options.engines!;
  /**
   * Models load in the background: the server answers at once, /readyz says not-ready until they are warm.
   * They start loading once the server listens (a cluster worker: before, since it listens only when warm),
   * so a start that cannot listen stops before any model thread exists.
   */
  let enginesReady: Promise<void> = Promise.resolve();
  const startEngines = () => {
    enginesReady = engines ? engines.start(logger) : Promise.resolve();
    enginesReady.catch((err: Error) => logger.fatal({ err: err.message }, 'a model failed to load'));
  };
  if (engines && ownsEngines && !onCpuOnly(config.engineExecutionProviders)) {
    logger.info({ executionProviders: config.engineExecutionProviders }, 'model sessions use these onnxruntime execution providers, in order');
  }

  const decoder = new DecoderPool({
    size: config.decoderThreads,
    timeoutMs: config.decodeTimeoutMs,
    streamsPerWorker: config.decoderStreamsPerThread,
    maxQueue: config.decoderMaxQueue,
    memoryMb: config.decoderMemoryMb,
  });
  // A server with models decodes uploads: its first decoder process starts now, while the server is still
  // small, not on the first upload's path (a fork stalls the event loop).
  if (engines) decoder.warm();
  // Speech is encoded by these pools, passed to every route and call that speaks, as the decoder is.
  const encoders = new SpeechEncoders({
    threads: config.encoderThreads ?? defaultEncoderThreads(),
    aac: { size: config.aacPoolSize, maxIdle: config.aacPoolMaxIdle, ffmpegPath: config.ffmpegPath, continuationNiceness: config.aacContinuationNiceness },
  });
  // Threads start now, not on the first mp3/opus/flac request's path to its first bytes.
  encoders.warm();
  // One VAD scheduler for every realtime session (their windows are scored together); none without a `vad` model.
  const vadEngine = engines?.get('vad');
  const vad = vadEngine ? new VadScheduler(vadEngine, { rate: config.vadRate }) : null;
  // How busy the machine is, for the realtime courtesies that yield when it is saturated (unref'd timer).
  const cpuLoad = watchCpuLoad();
  // Phone calls: call tokens, carrier streams, webhooks, the AudioSocket listener (src/telephony).
  const telephony = await setupTelephony({ config, store, ledger, logger, metrics, engines, vad, decoder, encoders, keySessions });
  const { routes } = createApi({
    telephonyRoutes: telephony.routes,
    realtime: {
      vad,
      maxBufferSeconds: config.realtimeMaxBufferSeconds,
      inputRate: { maxRate: config.realtimeMaxInputRate, burstSeconds: config.realtimeInputBurstSeconds },
      maxMessageBytes: config.realtimeMaxMessageBytes,
      finalTimeoutMs: config.realtimeFinalTimeoutMs,
      interimAllowed: config.realtimeInterimMaxCpu >= 1 ? undefined : () => cpuLoad.busyShare() < config.realtimeInterimMaxCpu,
    },
    engines,
    decoder,
    encoders,
    maxAudioSeconds: config.maxAudioSeconds,
    store,
    keys,
    limiter,
    limitDefaults: limitDefaultsOf(config),
    maxRealtimeSessionsPerKey: config.realtimeMaxSessionsPerKey,
    keySessions,
    ledger,
    catalog,
    metrics,
    logger,
    vendor: config.vendor,
    version: KUMA_VERSION,
    readinessChecks: [
      // Not ready from the moment close() is called: the balancer stops sending new work here.
      async () => (draining ? { name: 'lifecycle', ready: false, detail: 'draining: this node is stopping' } : { name: 'lifecycle', ready: true }),
      async () => {
        try {
          await store.countAccounts();
          return { name: 'store', ready: true };
        } catch (err) {
          // /readyz is public: the reason's code, never the driver's message (hosts, socket paths).
          return {
            name: 'store',
            ready: false,
            detail: err instanceof StoreUnavailableError ? `the account database is unreachable (${err.reason})` : 'the account database failed a query',
          };
        }
      },
      async () => engines?.readiness() ?? { name: 'models', ready: true, detail: 'no models configured' },
    ],
    extraRoutes: options.extraRoutes?.({ store, ledger, catalog, engines }),
  });

  const site = config.studio ? await studioSite(logger, { vendor: config.vendor, demoModels: servesDemoModels(engines) }) : undefined;
  if (options.listenWhenWarm) {
    startEngines();
    await enginesReady.catch(() => undefined);
  }
  const http = await startHttpServer({
    site,
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
    websocket: {
      idleTimeoutS: config.wsIdleTimeoutS,
      maxBufferedBytes: config.wsMaxBufferedBytes,
      maxSockets: config.wsPreAuthMaxSockets,
      maxPerAddress: config.wsPreAuthMaxPerAddress,
    },
    tls: config.tlsCert ? { certFile: config.tlsCert, keyFile: config.tlsKey } : undefined,
    // A cluster's workers share the port on purpose; a lone server binds it exclusively (a busy port fails the start).
    sharedPort: config.workers > 1,
  }).catch(async (err: unknown) => {
    // Nothing else of this start may outlive it: the decoder, the encoder threads, the store.
    await Promise.allSettled([
      telephony.close(0),
      vad?.close(),
      decoder.close(),
      encoders.close(),
      ownsEngines ? engines?.close() : undefined,
      ownsStore ? store.close() : undefined,
    ]);
    cpuLoad.close();
    keySessions.close();
    throw err;
  });
  if (!options.listenWhenWarm) startEngines();
  logger.info({ port: http.port, host: config.host, tls: Boolean(config.tlsCert), store: ownsStore ? describeStoreLocation(config) : 'embedder' }, 'listening');
  // After a peak of sockets, one garbage collection gives back what they held (observability/memory-reducer.ts).
  const memoryReducer = startMemoryReducer({ connections: () => http.openSessions() + http.inFlight(), logger });

  let closing: Promise<void> | null = null;
  return {
    port: http.port,
    store,
    ledger,
    logger,
    metrics,
    engines,
    encoders,
    routes,
    enginesReady,
    limiter,
    requestsInFlight: () => http.inFlight(),
    audioSocketPort: telephony.audioSocketPort,
    close: () =>
      (closing ??= (async () => {
        draining = true;
        if (config.drainDelayMs > 0) {
          logger.info({ ms: config.drainDelayMs }, 'draining: /readyz answers 503 while this node still serves');
          await new Promise((resolve) => setTimeout(resolve, config.drainDelayMs));
        }
        // WebSocket sessions (carrier calls among them) and AudioSocket calls are told at once and share the grace.
        await Promise.all([http.close(config.shutdownGraceMs), telephony.endCalls(config.shutdownGraceMs)]);
        await telephony.close(config.shutdownGraceMs);
        keySessions.close();
        await vad?.close();
        cpuLoad.close();
        memoryReducer.close();
        if (ownsEngines) await engines?.close();
        await encoders.close();
        await decoder.close();
        if (ownsStore) await store.close();
        logger.info('stopped');
        logger.flush();
      })()),
  };
}

/** Where models/generator writes the demo pack. */
const DEMO_MODELS_DIR = fileURLToPath(new URL('../models/demo/', import.meta.url));

/** Whether the speech or translation models come from the demo pack (the Studio then says they are demos). */
function servesDemoModels(engines: EngineRegistry | null): boolean {
  return [TRANSCRIPTION_MODEL_ID, SPEECH_MODEL_ID, TRANSLATION_MODEL_ID].some((id) => engines?.get(id)?.entry.absoluteDir.startsWith(DEMO_MODELS_DIR));
}

/** Generates the demo model pack when the config uses it and it is missing or stale (a no-op otherwise). */
export async function ensureModelFiles(config: Config): Promise<void> {
  if (!config.modelsManifest || !config.demoPack) return;
  // Loaded only when needed: the generator is development-grade code that a production install with
  // real models never runs.
  const { ensureDemoPack } = await import('../models/generator/generate-demo-pack.js');
  await ensureDemoPack();
}

async function enginesFromConfig(config: Config, catalog: ModelCatalog, logger: Logger): Promise<EngineRegistry | null> {
  if (!config.modelsManifest) return null;
  await ensureModelFiles(config);
  // A model whose every served id is retired answers 404 whatever is loaded: loading it would only cost the
  // start its time and the machine its memory (KUMA_LOAD_RETIRED_MODELS=true loads it anyway).
  const retired = (ids: string[]) => ids.every((id) => catalog.isRetired(id));
  const skipped: string[] = [];
  const keep = (entry: { id: string; aliases: string[] }) => {
    if (config.loadRetiredModels || !retired([entry.id, ...entry.aliases])) return true;
    skipped.push(entry.id);
    return false;
  };
  const registry = EngineRegistry.fromManifest(
    config.modelsManifest,
    config.vendor,
    {
      intraOpThreads: config.engineIntraOpThreads,
      interOpThreads: config.engineInterOpThreads,
      niceness: config.engineNiceness,
      maxAutoReplicas: config.engineReplicasMax,
      executionProviders: config.engineExecutionProviders,
      sharedWeights: config.engineShareWeights ? { cacheDir: path.resolve(config.modelCacheDir), minBytes: 64 * 1024 * 1024 } : null,
    },
    keep,
  );
  if (skipped.length)
    logger.info({ models: skipped, retirementDate: catalog.retirementDate }, 'not loading retired models (KUMA_LOAD_RETIRED_MODELS=true loads them)');
  return registry;
}
