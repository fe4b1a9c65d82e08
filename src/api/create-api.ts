/**
 * Assembles the API: every surface's route definitions, the auth and balance gate in front of the
 * authenticated ones (the admin API authenticates its own, with admin keys: src/api/admin/), and the
 * mounting of each route under its surface's prefixes (the primary surface answers identically under
 * /compat/v1 and /openai/v1). The result is what the transport serves.
 */
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Store } from '../store/store.js';
import type { KeyLookup } from '../auth/api-keys.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import { limitSubjects, type LimitDefaults } from '../limits/limits.js';
import type { Ledger } from '../billing/ledger.js';
import { modelRoutes } from './compat/models.js';
import { transcriptionRoute } from './compat/transcriptions.js';
import { translationRoute } from './compat/translations.js';
import { chatRoute } from './compat/chat.js';
import { speechRoute } from './compat/speech.js';
import { speechSocketRoutes } from './realtime/speech-socket-route.js';
import { textToSpeechRoutes } from './elevenlabs/text-to-speech-route.js';
import { realtimeRoute } from './realtime/realtime-route.js';
import type { VadService } from '../realtime/vad/contract.js';
import type { InputRateOptions } from '../realtime/input-rate.js';
import type { EngineRegistry } from '../engines/engine-registry.js';
import type { DecoderPool } from '../codecs/decode/decoder-pool.js';
import type { EncoderSource } from '../codecs/encoders/speech-encoders.js';
import type { ModelCatalog } from './model-catalog.js';
import { buildOpenApiDocument } from './openapi.js';
import { opsRoutes, type ReadinessCheck } from './ops/ops-routes.js';
import { OpenApiDocumentSchema } from './schemas/ops.js';
import { jsonContent } from './schemas/responses.js';
import { SURFACE_PREFIXES, type ApiRequest, type ApiResult, type HttpRoute, type RouteDef } from './types.js';
import { ApiError, toApiError } from './errors.js';
import { authorize, openSession, presentedCredential, SessionOpening } from './route-auth.js';
import { firstMessageSession } from './first-message-auth.js';
import { chooseSubprotocol } from './subprotocols.js';
import { SessionCap } from '../limits/session-cap.js';
import type { KeySessions } from '../auth/key-sessions.js';
import { clientSecretRoutes } from './realtime/client-secrets.js';
import { nativeSurface } from './native/native-surface.js';
import { nativeRoutes } from './native/native-routes.js';
import { adminRoutes } from './admin/admin-routes.js';

export interface ApiDeps {
  /** For key lookups and the admin API, wrapped by withKeyCacheInvalidation so this process's changes apply at once. */
  store: Store;
  ledger: Ledger;
  catalog: ModelCatalog;
  metrics: Metrics;
  logger: Logger;
  vendor: string;
  version: string;
  readinessChecks: ReadinessCheck[];
  engines: EngineRegistry | null;
  decoder: DecoderPool;
  /** The server's speech encoders (server.ts). */
  encoders: EncoderSource;
  maxAudioSeconds: number;
  /** Where keys are looked up (the KeyCache in front of the store); the store itself when absent. */
  keys?: KeyLookup;
  /** Per-key and per-account limits; null or absent = no limits (KUMA_RATE_LIMITS=off). */
  limiter?: RateLimiter | null;
  limitDefaults?: LimitDefaults;
  /** Realtime sessions (GET /realtime): the VAD service and limits; absent = no VAD, default limits. */
  realtime?: {
    vad: VadService | null;
    maxBufferSeconds: number;
    inputRate?: InputRateOptions;
    maxMessageBytes: number;
    interimAllowed?: () => boolean;
    finalTimeoutMs?: number;
  };
  /** WebSocket sessions one key may have open at once; 0 or absent = unlimited. */
  maxRealtimeSessionsPerKey?: number;
  /** Open sessions by key, so that revoking a key ends them (src/auth/key-sessions.ts); absent = not tracked. */
  keySessions?: KeySessions;
  /** Telephony (/telephony/v1): call tokens, carrier streams, control sockets (src/telephony-wiring.ts). */
  telephonyRoutes?: RouteDef[];
  /** Extra routes (tests mount probes here; later features add theirs). */
  extraRoutes?: RouteDef[];
}

export function createApi(deps: ApiDeps): { routes: HttpRoute[]; definitions: RouteDef[] } {
  const compat = { ...deps };
  const sessionCap = new SessionCap(deps.maxRealtimeSessionsPerKey ?? 0);
  const definitions: RouteDef[] = [
    ...modelRoutes(deps.catalog, deps.engines),
    transcriptionRoute(compat),
    translationRoute(compat),
    chatRoute(compat),
    speechRoute(compat),
    ...speechSocketRoutes(compat),
    ...textToSpeechRoutes(compat),
    realtimeRoute({ ...compat, vad: null, maxBufferSeconds: 60, maxMessageBytes: 15 * 1024 * 1024, ...deps.realtime }),
    ...clientSecretRoutes(deps.store),
    ...nativeSurface(nativeRoutes(compat), deps.catalog, deps.metrics),
    ...(deps.telephonyRoutes ?? []),
    // Authenticated by admin keys inside their handlers (`auth: false` here); `store` must be the
    // cache-invalidating one (server.ts) for their revocations to apply at the next request.
    ...adminRoutes(deps),
    ...(deps.extraRoutes ?? []),
  ];
  let openapi: unknown;
  definitions.push({
    method: 'GET',
    path: '/openapi.json',
    surface: 'compat',
    auth: false,
    openapi: {
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI 3.1 document',
      tags: ['Operations'],
      responses: { 200: { description: 'The document', content: [jsonContent(OpenApiDocumentSchema)] } },
    },
    handler: async () => ({ kind: 'json', body: openapi }),
  });
  definitions.push(...opsRoutes(deps.metrics, deps.readinessChecks));
  // From the complete table, so that every route served (this one included) is described.
  openapi = buildOpenApiDocument(definitions, { title: 'Kuma', version: deps.version, vendor: deps.vendor });

  const routes: HttpRoute[] = [];
  for (const def of definitions) {
    for (const prefix of SURFACE_PREFIXES[def.surface]) {
      routes.push({
        method: def.method,
        pattern: prefix + def.path,
        surface: def.surface,
        websocket: def.websocket,
        handle: (req) => handle(deps, sessionCap, def, req),
      });
    }
  }
  return { routes, definitions };
}

async function handle(deps: ApiDeps, sessionCap: SessionCap, def: RouteDef, req: ApiRequest): Promise<ApiResult> {
  const opening = new SessionOpening(req);
  try {
    def.gate?.(req);
    const presented = def.auth ? presentedCredential(def, req) : undefined;
    // An upgrade with no credential, to a route that takes one in the first message: open, then check it.
    if (def.auth && def.firstMessageAuth && presented === undefined && isUpgrade(req)) {
      return firstMessageSession(def.firstMessageAuth, chooseSubprotocol(req.headers), (credential) => authorizeLate(deps, sessionCap, def, req, credential));
    }
    const caller = def.auth ? await authorize(deps, def, req, presented, opening) : null;
    const result = await def.handler(req, caller);
    return result.kind === 'duplex' && caller ? openSession(deps, sessionCap, caller, opening, result) : result;
  } catch (err) {
    await opening.giveBack();
    throw asClientError(deps, req, err);
  }
}

/** The checks of `handle`, for a socket already open whose first message carried `credential`. */
async function authorizeLate(deps: ApiDeps, sessionCap: SessionCap, def: RouteDef, req: ApiRequest, credential: string) {
  const opening = new SessionOpening(req, true);
  try {
    const caller = await authorize(deps, def, req, credential, opening);
    const result = await def.handler(req, caller);
    if (result.kind !== 'duplex') throw new Error(`${def.path}: a route with firstMessageAuth must answer a duplex result`);
    return { session: openSession(deps, sessionCap, caller, opening, result), abandon: () => opening.giveBack() };
  } catch (err) {
    await opening.giveBack();
    throw asClientError(deps, req, err);
  }
}

function isUpgrade(req: ApiRequest): boolean {
  return /\bwebsocket\b/i.test(req.headers.upgrade ?? '');
}

/**
 * A domain error that is the client's doing (an upload that does not decode, a balance that cannot pay)
 * leaves here as the ApiError it maps to, so the transport answers it without logging it as a server
 * failure; it is logged at info with its reason. Anything that maps to a 5xx goes on unchanged, to be
 * logged at error level with its stack.
 */
function asClientError(deps: ApiDeps, req: ApiRequest, err: unknown): unknown {
  if (err instanceof ApiError) return err;
  const mapped = toApiError(err);
  if (mapped.status >= 500) return err;
  deps.logger.info({ requestId: req.requestId, status: mapped.status, code: mapped.code, reason: mapped.message }, 'request refused');
  return mapped;
}
