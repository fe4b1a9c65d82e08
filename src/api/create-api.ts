/**
 * Assembles the API: every surface's route definitions, the auth and balance gate in front of the
 * authenticated ones (the admin API authenticates its own, with admin keys: src/api/admin/), and the
 * mounting of each route under its surface's prefixes (the primary surface answers identically under
 * /compat/v1 and /openai/v1). The result is what the transport serves.
 */
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Store } from '../store/store.js';
import { authenticateApiKey, extractApiKey, keyFromSubprotocols, type KeyLookup } from '../auth/api-keys.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import { limitSubjects, type LimitDefaults } from '../limits/limits.js';
import type { Ledger } from '../billing/ledger.js';
import { modelRoutes } from './compat/models.js';
import { transcriptionRoute } from './compat/transcriptions.js';
import { translationRoute } from './compat/translations.js';
import { chatRoute } from './compat/chat.js';
import { speechRoute } from './compat/speech.js';
import { speechSocketRoutes } from './realtime/speech-socket-route.js';
import { realtimeRoute } from './realtime/realtime-route.js';
import type { VadService } from '../realtime/vad/contract.js';
import type { InputRateOptions } from '../realtime/input-rate.js';
import type { EngineRegistry } from '../engines/engine-registry.js';
import type { DecoderPool } from '../codecs/decode/decoder-pool.js';
import type { ModelCatalog } from './model-catalog.js';
import { buildOpenApiDocument } from './openapi.js';
import { opsRoutes, type ReadinessCheck } from './ops/ops-routes.js';
import { OpenApiDocumentSchema } from './schemas/ops.js';
import { jsonContent } from './schemas/responses.js';
import { SURFACE_PREFIXES, type ApiRequest, type ApiResult, type Caller, type DuplexResult, type HttpRoute, type RouteDef } from './types.js';
import { ApiError, toApiError } from './errors.js';
import { giveBackClientSecret, isClientSecret, redeemClientSecret, SECRET_NOT_ACCEPTED_MESSAGE } from '../auth/client-secrets.js';
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
  maxAudioSeconds: number;
  /** Where keys are looked up (the KeyCache in front of the store); the store itself when absent. */
  keys?: KeyLookup;
  /** Per-key and per-account limits; null or absent = no limits (KUMA_RATE_LIMITS=off). */
  limiter?: RateLimiter | null;
  limitDefaults?: LimitDefaults;
  /** Realtime sessions (GET /realtime): the VAD service and limits; absent = no VAD, default limits. */
  realtime?: { vad: VadService | null; maxBufferSeconds: number; inputRate?: InputRateOptions; maxMessageBytes: number; interimAllowed?: () => boolean; finalTimeoutMs?: number };
  /** WebSocket sessions one key may have open at once; 0 or absent = unlimited. */
  maxRealtimeSessionsPerKey?: number;
  /** Open sessions by key, so that revoking a key ends them (src/auth/key-sessions.ts); absent = not tracked. */
  keySessions?: KeySessions;
  /** Telephony (/telephony/v1): call tokens, carrier streams, control sockets (src/telephony/telephony-setup.ts). */
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
    const caller = def.auth ? await authorize(deps, def, req, opening) : null;
    const result = await def.handler(req, caller);
    return result.kind === 'duplex' && caller ? openSession(deps, sessionCap, caller, opening, result) : result;
  } catch (err) {
    await opening.giveBack();
    throw asClientError(deps, req, err);
  }
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

async function authorize(deps: ApiDeps, def: RouteDef, req: ApiRequest, opening: SessionOpening): Promise<Caller> {
  const headers = req.headers;
  // The native surface takes x-api-key only (SPEC §5.3).
  // A browser's WebSocket carries the key as a subprotocol entry instead (PROTOCOLS §8); ElevenLabs clients
  // of the speech socket send theirs as `xi-api-key`.
  const presented =
    def.surface === 'native'
      ? headers['x-api-key']?.trim() || undefined
      : (extractApiKey({ authorization: headers.authorization, 'x-api-key': headers['x-api-key'] ?? headers['xi-api-key'] }) ?? keyFromSubprotocols(headers['sec-websocket-protocol']));
  let caller: Caller;
  if (presented !== undefined && isClientSecret(presented)) {
    // Checked before the lookup: a secret presented where it is not accepted is refused without consuming it.
    if (!def.clientSecrets) throw new ApiError('invalid_api_key', SECRET_NOT_ACCEPTED_MESSAGE);
    const redeemed = await redeemClientSecret(deps.store, presented);
    caller = redeemed.caller;
    // Taken out of the store now, so that of two upgrades racing with one secret only this one has it; put
    // back if this upgrade is refused after all (any check below, the handler, the session cap, no 101).
    opening.unlessOpened(() =>
      giveBackClientSecret(deps.store, redeemed.record).catch((err: Error) =>
        deps.logger.warn({ requestId: req.requestId, err: err.message }, 'a client secret could not be put back after a refused upgrade'),
      ),
    );
  } else {
    caller = await authenticateApiKey(deps.keys ?? deps.store, presented);
  }
  // Limits before the balance: both refusals are free, and the in-memory check is the cheaper one. An
  // admitted request holds its places until its response has ended, however it ends.
  if (deps.limiter && deps.limitDefaults) {
    const admission = deps.limiter.admit(limitSubjects(deps.limitDefaults, caller));
    Object.assign(req.responseHeaders, admission.headers);
    req.onFinished(() => admission.release());
  }
  // Work that costs money is refused before the body is read when nothing is available: the balance less
  // what requests in flight hold. The exact check, and the hold, come when the handler reserves its cost.
  if (def.billable) await deps.ledger.assertCanStart(caller.account.id);
  return caller;
}

/**
 * An upgrade request on its way to an open socket: what it took before the socket opened (a session place, a
 * client secret) is given back if it never opens — before the answer goes out when a check refuses it (so a
 * client retrying at once finds its secret), else when the request ends (a plain GET's 426, a client gone
 * before the 101).
 */
class SessionOpening {
  opened = false;
  private pending: (() => unknown)[] = [];
  private watching = false;

  constructor(private readonly req: ApiRequest) {}

  unlessOpened(giveBack: () => unknown): void {
    this.pending.push(giveBack);
    if (this.watching) return;
    this.watching = true;
    // uWS opens the socket synchronously within the upgrade, so by the time the request ends `opened` is known.
    this.req.onFinished(() => {
      if (!this.opened) void this.giveBack();
    });
  }

  /** Gives back everything taken so far, once (a give-back may be a store write: awaited). */
  async giveBack(): Promise<void> {
    const runs = this.pending;
    this.pending = [];
    await Promise.all(runs.map((run) => run()));
  }
}

/**
 * A WebSocket session holds a place under its key's session cap (429 before the upgrade when full) from now
 * until its socket closes; an upgrade that never completes gives the place back when its request ends. Once
 * open, the session is registered under its key, so that revoking the key ends it (close 1008 `key_revoked`,
 * after whatever the session's own `onKeyRevoked` tells its client).
 */
function openSession(deps: ApiDeps, cap: SessionCap, caller: Caller, opening: SessionOpening, result: DuplexResult): DuplexResult {
  const release = cap.acquire(caller.key.id);
  opening.unlessOpened(release);
  return {
    ...result,
    open(peer) {
      opening.opened = true;
      let unregister: (() => void) | undefined;
      // Attached before the route's open, which may throw (the transport then closes the socket 1011).
      if (peer.signal.aborted) release();
      else peer.signal.addEventListener('abort', () => (release(), unregister?.()), { once: true });
      const handler = result.open(peer);
      if (!peer.signal.aborted) {
        unregister = deps.keySessions?.register(caller.key.id, () => {
          if (handler.onKeyRevoked) handler.onKeyRevoked();
          else peer.close(1008, 'key_revoked');
        });
      }
      return handler;
    },
  };
}
