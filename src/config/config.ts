/**
 * The whole runtime configuration: one zod schema, read from the environment once at boot, validated,
 * and frozen. A bad value stops the server at start with a message naming the variable.
 */
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { PriceTableSchema } from './prices.js';
import { parseOutboundPolicy } from '../outbound/outbound-policy.js';

/**
 * '' (not set) or a postgres:// / postgresql:// URL. Only the scheme is checked here: libpq-style URLs that
 * WHATWG's URL refuses are valid (postgres://kuma@/kuma?host=/run/postgresql, a Unix socket), and the
 * driver reports anything else it cannot use when the store opens.
 */
function isPostgresUrl(value: string): boolean {
  return value === '' || /^postgres(ql)?:\/\/\S+$/.test(value);
}

const int = (def: number) => z.coerce.number().int().nonnegative().default(def);

export const ConfigSchema = z
  .object({
    host: z.string().default('0.0.0.0'),
    port: z.coerce.number().int().min(0).max(65535).default(8080),
    dbPath: z.string().default(path.join('data', 'kuma.sqlite')),
    /**
     * PostgreSQL connection URL: when set, the store is PostgreSQL (shared by every node) and dbPath is unused;
     * empty = the embedded SQLite file. Never logged (it may hold a password).
     */
    databaseUrl: z.string().refine(isPostgresUrl, 'must be a postgres:// or postgresql:// URL (e.g. postgres://kuma:secret@db.internal:5432/kuma)').default(''),
    logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
    /** The service maker's name: the extension object's key, model ids' prefix and `owned_by` (SPEC's `vendor`). */
    vendor: z
      .string()
      .regex(/^[a-z][a-z0-9_-]*$/)
      .default('djelia'),
    /** Day the legacy models and native routes retire (SPEC §9); they answer 404 from this day on. */
    retirementDate: z.iso.date().default('2026-09-20'),
    /** Balance given to the dev account created on first start with an empty store, in units. */
    devBalanceUnits: z.coerce.number().nonnegative().default(100),
    maxJsonBodyBytes: int(1024 * 1024),
    maxUploadBytes: int(25 * 1024 * 1024),
    /** Longest audio accepted for transcription (413 audio_too_large above), in seconds. */
    maxAudioSeconds: z.coerce.number().positive().default(7200),
    /** Child processes decoding uploads (WASM decoders block what they run on; a runaway one dies alone). */
    decoderThreads: z.coerce.number().int().min(1).max(32).default(1),
    /**
     * A single upload's decoding is abandoned (400) once its own decoding work takes this long (time spent
     * waiting for a busy model is not counted); a decoder process silent this long while busy is replaced.
     */
    decodeTimeoutMs: int(60_000),
    /** Uploads one decoder process decodes at once, interleaved (a stream waiting for its model costs no CPU). */
    decoderStreamsPerThread: z.coerce.number().int().min(1).max(1024).default(16),
    /** Uploads that may wait for a decoder stream; more are refused with 503 and Retry-After. */
    decoderMaxQueue: int(64),
    /**
     * Worker threads encoding speech (all formats but aac/fmp4) off the I/O thread; 0 = encode on
     * the I/O thread. Default: one per core, 1 to 4 (src/codecs/encode-pool/shared-pool.ts).
     */
    encoderThreads: z.coerce.number().int().min(0).max(64).optional(),
    /** The ffmpeg that encodes `aac` and `fmp4`; empty = the static build of the @ffmpeg-installer package. */
    ffmpegPath: z.string().default(''),
    /** ffmpeg processes kept started and ready for AAC streams at all times (0 = start one per stream). */
    aacPoolSize: z.coerce.number().int().min(0).max(256).default(2),
    /** ffmpeg processes kept after a burst for the next streams; those beyond aacPoolSize stop after 60 s unused. */
    aacPoolMaxIdle: z.coerce.number().int().min(0).max(4096).default(64),
    /** Niceness of an ffmpeg process once its stream's first audio went out (below the model replicas' 10). */
    aacContinuationNiceness: z.coerce.number().int().min(0).max(19).default(15),
    /**
     * Memory (MB) one decoder process may use besides twice the uploads it holds; a file that makes it use
     * more is stopped with 400 and only that process is replaced.
     */
    decoderMemoryMb: z.coerce.number().int().min(64).default(512),
    /** Upload parts larger than this are written to a temp file instead of being held in memory. */
    uploadSpillBytes: int(1024 * 1024),
    tmpDir: z.string().default(os.tmpdir()),
    /** A streaming client that reads nothing for this long is disconnected (its buffers are bounded anyway). */
    streamStallTimeoutMs: int(30_000),
    /** In-flight requests get this long to finish after SIGTERM before the process exits. */
    shutdownGraceMs: int(10_000),
    /**
     * On SIGTERM, /readyz answers 503 (draining) for this long while the node keeps serving, so a load
     * balancer's health check takes it out of rotation before it stops listening; 0 = stop listening at once.
     */
    drainDelayMs: int(0),
    /**
     * Server processes on this machine, all on one port (SO_REUSEPORT): a primary process starts them,
     * restarts one that dies, and replaces them one by one on SIGHUP. 1 = a single process, no primary.
     */
    workers: z.coerce.number().int().min(1).max(64).default(1),
    corsOrigin: z.string().default('*'),
    /**
     * Model manifest (served ids → engines and model directories); empty = serve no models. `none` says the
     * same from the environment, where an empty variable means "not set" (e.g. a node of an API-only tier).
     */
    modelsManifest: z
      .string()
      .default(path.join('models', 'kuma-models.json'))
      .transform((value) => (value === 'none' ? '' : value)),
    /**
     * Load models whose every served id is retired (past retirementDate). Off: they are left unloaded, since
     * their ids answer 404 anyway; on: loaded as before (their ids still answer 404 once retired).
     */
    loadRetiredModels: z.union([z.boolean(), z.stringbool()]).default(false),
    /** Generate the demo model pack on start when missing or out of date (the default manifest uses it). */
    demoPack: z.union([z.boolean(), z.stringbool()]).default(true),
    /** Serve Kuma Studio (the web page at `/`, src/studio), built from its sources at start; off = the API only. */
    studio: z.union([z.boolean(), z.stringbool()]).default(true),
    /** onnxruntime threads per model replica (intra-op: within an operator; inter-op: across operators); intra-op 0 = by cores (manifest.ts defaultIntraOpThreads). */
    engineIntraOpThreads: z.coerce.number().int().min(0).max(64).default(0),
    engineInterOpThreads: z.coerce.number().int().min(1).max(64).default(1),
    /**
     * onnxruntime execution providers of every model session, in order of preference (`cuda,cpu`); empty = the
     * CPU, as `cpu` alone. Checked against the installed onnxruntime-node at start (engines/onnx/execution-providers.ts).
     */
    engineExecutionProviders: z
      .string()
      .default('')
      .transform((list) => [
        ...new Set(
          list
            .split(',')
            .map((name) => name.trim().toLowerCase())
            .filter(Boolean),
        ),
      ]),
    /** Scheduling niceness of model replica threads (0 = like the I/O thread, 19 = lowest); see README "Scheduling". */
    engineNiceness: z.coerce.number().int().min(0).max(19).default(10),
    /** Cap on the replicas of a model whose manifest entry does not set them (default: by cores, manifest.ts). */
    engineReplicasMax: z.coerce.number().int().min(1).max(64).default(16),
    /** Replicas of a model of 64 MB or more map one shared copy of its weights (engines/onnx/shared-weights.ts). */
    engineShareWeights: z.union([z.boolean(), z.stringbool()]).default(true),
    /** Where the shared copies of model weights are written (once per model file and onnxruntime version). */
    modelCacheDir: z.string().min(1).default(path.join('data', 'model-cache')),
    prices: PriceTableSchema.default(PriceTableSchema.parse({})),
    /** Per-key and per-account rate limits (README "Rate limits"); false turns every limit off. */
    rateLimits: z.union([z.boolean(), z.stringbool()]).default(true), // stringbool takes on/off, true/false, 1/0
    /** Defaults for every account (0 = unlimited); `npm run keys -- limits set` overrides them per account. */
    accountRequestsPerMinute: int(600),
    accountTokensPerMinute: int(60_000),
    accountConcurrent: int(16),
    /** Defaults for every key; 0 = the key is bounded only by its account's limits. */
    keyRequestsPerMinute: int(0),
    keyTokensPerMinute: int(0),
    keyConcurrent: int(0),
    /**
     * How long an authenticated key (account, key, limit overrides) is served from memory. Changes made by
     * this process (revocation, limits) apply at once; changes by another process (the keys CLI) within this.
     */
    authCacheTtlMs: int(1000),
    /** WebSocket: seconds without any frame before the socket is closed (pings go out automatically; pongs count). */
    wsIdleTimeoutS: z.coerce.number().int().min(0).max(960).default(120),
    /** WebSocket: a client with more than this queued toward it is closed 1008 "client is not reading". */
    wsMaxBufferedBytes: z.coerce
      .number()
      .int()
      .min(1024)
      .default(4 * 1024 * 1024),
    /**
     * WebSocket sockets open before their caller is authenticated (a carrier stream whose token comes in its
     * start message), in all and from one client address (IPv6: one /64); 0 = no cap. Beyond: 503 / 429.
     */
    wsPreAuthMaxSockets: int(256),
    wsPreAuthMaxPerAddress: int(16),
    /** Realtime sessions one key may have open at once (0 = unlimited); more are refused 429 before the upgrade. */
    realtimeMaxSessionsPerKey: int(50),
    /**
     * Realtime sessions: manual mode commits uncommitted audio past this many seconds as an item (nothing is
     * dropped); server_vad commits a turn longer than this, and refuses appends while this much audio waits
     * for the VAD.
     */
    realtimeMaxBufferSeconds: z.coerce.number().int().min(5).max(600).default(60),
    /** Realtime sessions: audio is taken at most this many times faster than real time (after the burst); faster appends get an error event. */
    realtimeMaxInputRate: z.coerce.number().min(1).max(100).default(4),
    /** A realtime item whose transcript is not out this long after its commit gets `failed` transcription_timeout. */
    realtimeFinalTimeoutMs: z.coerce.number().int().min(500).max(600_000).default(10_000),
    /** Realtime sessions: seconds of audio a session may send at once before the input rate bound applies. */
    realtimeInputBurstSeconds: z.coerce.number().min(1).max(600).default(60),
    /** Realtime sessions: a client event larger than this is refused with an error event (OpenAI's limit is 15 MiB). */
    realtimeMaxMessageBytes: z.coerce
      .number()
      .int()
      .min(1024)
      .default(15 * 1024 * 1024),
    /**
     * Realtime turns get interim transcripts only while the machine's CPUs are busy less than this share (0–1;
     * 1 = always, 0 = never): they re-decode the growing turn, a courtesy a saturated machine cannot afford.
     */
    realtimeInterimMaxCpu: z.coerce.number().min(0).max(1).default(0.75),
    /**
     * Rate Silero scores realtime audio at: 16000, or 8000 (decimated in the VAD worker, ≈ 1.7× less model CPU
     * per window). 16000 by default: on the demo voice the 8 kHz mode scores much lower and misses phrase onsets
     * (src/engines/vad/silero-batch.ts, test/unit/realtime/vad).
     */
    vadRate: z.coerce
      .number()
      .pipe(z.union([z.literal(16000), z.literal(8000)], { error: 'must be 16000 or 8000' }))
      .default(16000),
    /** Signs per-call tokens; empty = a random secret made once and kept in the store (README "Telephony"). */
    telephonySecret: z
      .string()
      .refine((s) => s === '' || Buffer.byteLength(s, 'utf8') >= 32, 'must be at least 32 bytes (e.g. `openssl rand -base64 48`)')
      .default(''),
    /** Hosts Kuma may connect to for calls (relay URLs, webhooks, `play`), README "Telephony"; empty = none. */
    outboundAllow: z
      .string()
      .superRefine((spec, ctx) => {
        try {
          parseOutboundPolicy(spec);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message });
        }
      })
      .default(''),
    /** The operator's Twilio auth token: when set, Twilio streams must carry a valid X-Twilio-Signature. */
    twilioAuthToken: z.string().default(''),
    /** TLS certificate and key (PEM file paths): both set = https:// and wss:// on the same port. */
    tlsCert: z.string().default(''),
    tlsKey: z.string().default(''),
    /** Calls one account may have in progress at once (README "Telephony"); 0 = unlimited. */
    telephonyMaxCallsPerAccount: z.coerce.number().int().min(0).default(250),
    /**
     * A carrier stream that has not sent its start message by then is closed (1008 start_timeout). Short: a
     * stream without ?token= is unauthenticated until then, and carriers send `start` right after connecting.
     */
    telephonyStartTimeoutMs: z.coerce.number().int().min(100).default(5_000),
    /** How long Kuma waits for a relay application to accept its WebSocket (then the call ends, app_unreachable). */
    telephonyRelayConnectTimeoutMs: z.coerce.number().int().min(100).default(5_000),
    /** The server's public base URL as carriers dial it (wss://kuma.example.com): what Twilio signs. Empty = the Host header. */
    publicUrl: z.string().default(''),
    /** Asterisk AudioSocket TCP listener: off unless a port is set; every call on it acts for the API key below. */
    audioSocketPort: z.coerce.number().int().min(0).max(65535).optional(),
    audioSocketHost: z.string().default('127.0.0.1'),
    audioSocketApiKey: z.string().default(''),
    /** The call settings of AudioSocket calls, as POST /telephony/v1/tokens takes them (JSON). */
    audioSocketSettings: z.string().default('{}'),
    /** Telephony webhooks: one delivery attempt's limit, and attempts per event (README "Telephony", "Call events"). */
    webhookTimeoutMs: z.coerce.number().int().min(100).default(5_000),
    webhookMaxAttempts: z.coerce.number().int().min(1).max(20).default(6),
  })
  .refine((c) => Boolean(c.tlsCert) === Boolean(c.tlsKey), { message: 'KUMA_TLS_CERT and KUMA_TLS_KEY must be set together', path: ['tlsCert'] });

export type Config = Readonly<z.infer<typeof ConfigSchema>>;

/** Maps KUMA_* environment variables onto the schema's fields. */
const ENV_NAMES: Record<string, keyof z.input<typeof ConfigSchema>> = {
  KUMA_HOST: 'host',
  PORT: 'port',
  KUMA_PORT: 'port',
  KUMA_DB_PATH: 'dbPath',
  KUMA_DATABASE_URL: 'databaseUrl',
  KUMA_LOG_LEVEL: 'logLevel',
  KUMA_VENDOR: 'vendor',
  KUMA_RETIREMENT_DATE: 'retirementDate',
  KUMA_DEV_BALANCE: 'devBalanceUnits',
  KUMA_MAX_JSON_BODY_BYTES: 'maxJsonBodyBytes',
  KUMA_MAX_UPLOAD_BYTES: 'maxUploadBytes',
  KUMA_MAX_AUDIO_SECONDS: 'maxAudioSeconds',
  KUMA_DECODER_THREADS: 'decoderThreads',
  KUMA_DECODE_TIMEOUT_MS: 'decodeTimeoutMs',
  KUMA_DECODER_STREAMS_PER_THREAD: 'decoderStreamsPerThread',
  KUMA_DECODER_MAX_QUEUE: 'decoderMaxQueue',
  KUMA_ENCODER_THREADS: 'encoderThreads',
  KUMA_FFMPEG_PATH: 'ffmpegPath',
  KUMA_AAC_POOL_SIZE: 'aacPoolSize',
  KUMA_AAC_POOL_MAX_IDLE: 'aacPoolMaxIdle',
  KUMA_AAC_CONTINUATION_NICENESS: 'aacContinuationNiceness',
  KUMA_DECODER_MEMORY_MB: 'decoderMemoryMb',
  KUMA_UPLOAD_SPILL_BYTES: 'uploadSpillBytes',
  KUMA_TMP_DIR: 'tmpDir',
  KUMA_STREAM_STALL_TIMEOUT_MS: 'streamStallTimeoutMs',
  KUMA_SHUTDOWN_GRACE_MS: 'shutdownGraceMs',
  KUMA_DRAIN_DELAY_MS: 'drainDelayMs',
  KUMA_WORKERS: 'workers',
  KUMA_CORS_ORIGIN: 'corsOrigin',
  KUMA_MODELS_MANIFEST: 'modelsManifest',
  KUMA_DEMO_PACK: 'demoPack',
  KUMA_LOAD_RETIRED_MODELS: 'loadRetiredModels',
  KUMA_STUDIO: 'studio',
  KUMA_ENGINE_INTRA_OP_THREADS: 'engineIntraOpThreads',
  KUMA_ENGINE_INTER_OP_THREADS: 'engineInterOpThreads',
  KUMA_ENGINE_NICENESS: 'engineNiceness',
  KUMA_ENGINE_EXECUTION_PROVIDERS: 'engineExecutionProviders',
  KUMA_ENGINE_SHARE_WEIGHTS: 'engineShareWeights',
  KUMA_MODEL_CACHE_DIR: 'modelCacheDir',
  KUMA_RATE_LIMITS: 'rateLimits',
  KUMA_RATE_LIMIT_REQUESTS_PER_MINUTE: 'accountRequestsPerMinute',
  KUMA_RATE_LIMIT_TOKENS_PER_MINUTE: 'accountTokensPerMinute',
  KUMA_RATE_LIMIT_CONCURRENT: 'accountConcurrent',
  KUMA_KEY_RATE_LIMIT_REQUESTS_PER_MINUTE: 'keyRequestsPerMinute',
  KUMA_KEY_RATE_LIMIT_TOKENS_PER_MINUTE: 'keyTokensPerMinute',
  KUMA_KEY_RATE_LIMIT_CONCURRENT: 'keyConcurrent',
  KUMA_AUTH_CACHE_TTL_MS: 'authCacheTtlMs',
  KUMA_ENGINE_REPLICAS_MAX: 'engineReplicasMax',
  KUMA_WS_IDLE_TIMEOUT_S: 'wsIdleTimeoutS',
  KUMA_WS_MAX_BUFFERED_BYTES: 'wsMaxBufferedBytes',
  KUMA_WS_PREAUTH_MAX_SOCKETS: 'wsPreAuthMaxSockets',
  KUMA_WS_PREAUTH_MAX_PER_ADDRESS: 'wsPreAuthMaxPerAddress',
  KUMA_REALTIME_MAX_SESSIONS_PER_KEY: 'realtimeMaxSessionsPerKey',
  KUMA_REALTIME_MAX_BUFFER_SECONDS: 'realtimeMaxBufferSeconds',
  KUMA_REALTIME_MAX_INPUT_RATE: 'realtimeMaxInputRate',
  KUMA_REALTIME_FINAL_TIMEOUT_MS: 'realtimeFinalTimeoutMs',
  KUMA_REALTIME_INPUT_BURST_SECONDS: 'realtimeInputBurstSeconds',
  KUMA_REALTIME_INTERIM_MAX_CPU: 'realtimeInterimMaxCpu',
  KUMA_REALTIME_MAX_MESSAGE_BYTES: 'realtimeMaxMessageBytes',
  KUMA_VAD_RATE: 'vadRate',
  KUMA_TELEPHONY_SECRET: 'telephonySecret',
  KUMA_TELEPHONY_MAX_CALLS_PER_ACCOUNT: 'telephonyMaxCallsPerAccount',
  KUMA_PUBLIC_URL: 'publicUrl',
  KUMA_TELEPHONY_START_TIMEOUT_MS: 'telephonyStartTimeoutMs',
  KUMA_TELEPHONY_RELAY_CONNECT_TIMEOUT_MS: 'telephonyRelayConnectTimeoutMs',
  KUMA_AUDIOSOCKET_PORT: 'audioSocketPort',
  KUMA_AUDIOSOCKET_HOST: 'audioSocketHost',
  KUMA_AUDIOSOCKET_API_KEY: 'audioSocketApiKey',
  KUMA_AUDIOSOCKET_SETTINGS: 'audioSocketSettings',
  KUMA_OUTBOUND_ALLOW: 'outboundAllow',
  KUMA_TWILIO_AUTH_TOKEN: 'twilioAuthToken',
  KUMA_TLS_CERT: 'tlsCert',
  KUMA_TLS_KEY: 'tlsKey',
  KUMA_WEBHOOK_TIMEOUT_MS: 'webhookTimeoutMs',
  KUMA_WEBHOOK_MAX_ATTEMPTS: 'webhookMaxAttempts',
};

const PRICE_ENV_NAMES: Record<string, keyof z.input<typeof PriceTableSchema>> = {
  KUMA_PRICE_TRANSCRIPTION_PER_SECOND: 'transcriptionPerSecond',
  KUMA_PRICE_TRANSLATION_PER_CHARACTER: 'translationPerCharacter',
  KUMA_PRICE_TRANSLATION_PER_TOKEN: 'translationPerToken',
  KUMA_PRICE_SPEECH_PER_CHARACTER: 'speechPerCharacter',
};

export class ConfigError extends Error {}

/** Builds the config from the environment, then applies `overrides` (used by tests and embedders). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<z.input<typeof ConfigSchema>> = {}): Config {
  const raw: Record<string, unknown> = {};
  // Which variable set each field, so an error can name the one the operator actually wrote.
  const sources: Record<string, string> = {};
  for (const [name, field] of Object.entries(ENV_NAMES)) {
    if (env[name] === undefined || env[name] === '') continue;
    raw[field] = env[name];
    sources[field] = name;
  }
  const prices: Record<string, number> = {};
  for (const [name, field] of Object.entries(PRICE_ENV_NAMES)) {
    if (!env[name]) continue;
    prices[field] = Number(env[name]);
    sources[`prices.${field}`] = name;
  }
  if (Object.keys(prices).length) raw.prices = prices;
  const result = ConfigSchema.safeParse({ ...raw, ...overrides });
  if (!result.success) {
    const lines = result.error.issues.map((i) => issueLine(i.path.join('.'), sources[i.path.join('.')], i.message));
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return Object.freeze(result.data);
}

/** One refused setting as the operator reads it: `  field (VARIABLE): why`. */
function issueLine(field: string, envName: string | undefined, message: string): string {
  return `  ${field}${envName ? ` (${envName})` : ''}: ${message}`;
}

/** A setting refused by a check at start that needs more than its value (e.g. what the machine can run). */
export function invalidSetting(field: keyof Config, message: string): ConfigError {
  return invalidSettings([[field, message]]);
}

/** Several settings refused by checks at start (e.g. files that cannot be read), one line each. */
export function invalidSettings(problems: ReadonlyArray<readonly [keyof Config, string]>): ConfigError {
  const lines = problems.map(([field, message]) => issueLine(field, Object.entries(ENV_NAMES).findLast(([, f]) => f === field)?.[0], message));
  return new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
}
