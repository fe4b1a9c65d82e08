/**
 * The admin API's route shape: what every /admin/v1 route shares. Admin routes do not pass through the
 * API-key gate of create-api.ts (`auth: false` there): an admin key authenticates them here, before the
 * handler reads any body, and they have neither rate limits nor a balance. Also the audit trail that
 * every mutating admin call leaves, in the store and in the log.
 */
import { authenticateAdminKey } from '../../auth/admin-keys.js';
import { AdminAuthError } from '../../auth/errors.js';
import type { EngineRegistry } from '../../engines/engine-registry.js';
import type { LimitDefaults } from '../../limits/limits.js';
import type { RateLimiter } from '../../limits/rate-limiter.js';
import type { Logger } from '../../observability/logger.js';
import type { AdminKeyRecord, Store } from '../../store/store.js';
import { toApiError } from '../errors.js';
import type { ModelCatalog } from '../model-catalog.js';
import type { AuditAction } from '../schemas/admin.js';
import type { ApiRequest, ApiResult, HttpMethod, OpenApiInfo, RouteDef } from '../types.js';

export interface AdminDeps {
  /**
   * The store wrapped by withKeyCacheInvalidation (src/auth/key-cache.ts): a revocation or credit made here
   * drops this process's key cache, so the very next API request sees it.
   */
  store: Store;
  logger: Logger;
  catalog: ModelCatalog;
  engines: EngineRegistry | null;
  /** ms since the epoch: today's date for the usage report, `now` for the holds behind available balances. */
  now?: () => number;
  /** The API's limiter: null or absent = rate limits off (KUMA_RATE_LIMITS=off), which GET /limits reports. */
  limiter?: RateLimiter | null;
  /** The configured default limits, under the overrides; absent = unlimited. */
  limitDefaults?: LimitDefaults;
}

export interface AdminRouteDef {
  method: HttpMethod;
  /** Relative to /admin/v1. */
  path: string;
  /** Tagged Admin and secured by the admin key in the document; 401 and 403 are added by its builder. */
  openapi: Omit<OpenApiInfo, 'tags'>;
  handler(req: ApiRequest, admin: AdminKeyRecord): Promise<ApiResult>;
}

export function adminRoute(deps: AdminDeps, def: AdminRouteDef): RouteDef {
  return {
    method: def.method,
    path: def.path,
    surface: 'admin',
    auth: false,
    openapi: { ...def.openapi, tags: ['Admin'] },
    handler: async (req) => def.handler(req, await authenticate(deps, req)),
  };
}

async function authenticate(deps: AdminDeps, req: ApiRequest): Promise<AdminKeyRecord> {
  try {
    return await authenticateAdminKey(deps.store, req.headers.authorization);
  } catch (err) {
    if (!(err instanceof AdminAuthError)) throw err;
    // Whoever watches the admin API wants to see refusals; the reason says which kind, never the credential.
    deps.logger.info({ requestId: req.requestId, reason: err.reason }, 'admin authentication refused');
    throw toApiError(err);
  }
}

/**
 * Records a mutating admin call once it has happened: a row in the store (GET /admin/v1/audit) and a log
 * line. Neither carries key material — targets are ids, details are names, labels and amounts. The row is
 * written after the change it records (the Store has no transaction spanning both), so a crash between the
 * two would lose the row; awaiting it before answering means no client is told of an unaudited change.
 */
export async function audit(
  deps: AdminDeps,
  admin: AdminKeyRecord,
  req: ApiRequest,
  action: AuditAction,
  target: string,
  detail: Record<string, unknown>,
): Promise<void> {
  await deps.store.recordAdminAudit({ adminKeyId: admin.id, action, target, detail, requestId: req.requestId });
  deps.logger.info({ audit: true, action, target, adminKeyId: admin.id, requestId: req.requestId }, 'admin action');
}
