/**
 * Rate-limit overrides over the admin API, of an account (all its keys together) or of one API key — what
 * `npm run keys -- limits show|set|clear` does. Every answer gives the stored overrides and the limits in
 * force (the override, else the configured default; 0 = unlimited) and whether this server enforces limits
 * at all. Changes go through the cache-invalidating store, so the very next API request is limited by them;
 * both are audited with the values set, never anything else.
 */
import { applyOverrides, limitSubjectKind, UNLIMITED, type Limits, type LimitSubjectKind } from '../../limits/limits.js';
import type { LimitOverrides, Store } from '../../store/store.js';
import { ApiError } from '../errors.js';
import { AdminLimitsSchema, LIMIT_FIELDS, LimitsPatchRequestSchema } from '../schemas/admin-settings.js';
import { jsonContent } from '../schemas/responses.js';
import type { RouteDef } from '../types.js';
import { parseRequest } from '../validation.js';
import { adminRoute, audit, type AdminDeps } from './admin-route.js';

/** The API's names of the three budgets → the store's. */
const STORED_AS = {
  requests_per_minute: 'requestsPerMinute',
  tokens_per_minute: 'tokensPerMinute',
  concurrent: 'concurrent',
} as const satisfies Record<(typeof LIMIT_FIELDS)[number], keyof LimitOverrides>;

type LimitValues<T> = { requestsPerMinute: T; tokensPerMinute: T; concurrent: T };

const snakeCase = <T>(l: LimitValues<T>) => ({ requests_per_minute: l.requestsPerMinute, tokens_per_minute: l.tokensPerMinute, concurrent: l.concurrent });

function limitsView(deps: AdminDeps, subject: string, kind: LimitSubjectKind, overrides: LimitOverrides) {
  const defaults: Limits = deps.limitDefaults?.[kind] ?? UNLIMITED;
  return {
    subject,
    kind,
    // As create-api.ts decides: limits are checked only with both a limiter and the defaults.
    enforced: Boolean(deps.limiter && deps.limitDefaults),
    overrides: snakeCase(overrides),
    effective: snakeCase(applyOverrides(defaults, overrides)),
  };
}

async function requireSubject(store: Store, id: string): Promise<LimitSubjectKind> {
  const kind = await limitSubjectKind(store, id);
  if (!kind) throw new ApiError('subject_not_found', 'No account or API key with this id.', { param: 'subject' });
  return kind;
}

export function limitRoutes(deps: AdminDeps): RouteDef[] {
  const { store } = deps;
  const answer = { 200: { description: "The subject's overrides and the limits in force", content: [jsonContent(AdminLimitsSchema)] } };
  return [
    adminRoute(deps, {
      method: 'GET',
      path: '/limits/:subject',
      openapi: {
        operationId: 'adminGetLimits',
        summary: 'The rate limits of an account or an API key (by id): its stored overrides and the limits in force',
        responses: answer,
        errors: [404],
      },
      handler: async (req) => {
        const subject = req.params.subject!;
        const kind = await requireSubject(store, subject);
        return { kind: 'json', body: limitsView(deps, subject, kind, await store.getRateLimits(subject)) };
      },
    }),
    adminRoute(deps, {
      method: 'PATCH',
      path: '/limits/:subject',
      openapi: {
        operationId: 'adminSetLimits',
        summary: 'Override rate limits of an account or an API key: each field given is set (0 = unlimited) or, with null, put back to the default',
        request: { contentType: 'application/json', schema: LimitsPatchRequestSchema },
        responses: answer,
        errors: [404],
      },
      handler: async (req, admin) => {
        const body = parseRequest(LimitsPatchRequestSchema, await req.body.json());
        const subject = req.params.subject!;
        const kind = await requireSubject(store, subject);
        const changes: Partial<LimitOverrides> = {};
        for (const field of LIMIT_FIELDS) if (body[field] !== undefined) changes[STORED_AS[field]] = body[field];
        // Through the cache-invalidating store: the cached limits of every key go with it.
        const stored = await store.setRateLimits(subject, changes);
        await audit(deps, admin, req, 'limits.set', subject, { kind, ...body });
        return { kind: 'json', body: limitsView(deps, subject, kind, stored) };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE',
      path: '/limits/:subject',
      openapi: {
        operationId: 'adminClearLimits',
        summary: 'Drop every rate-limit override of an account or an API key: the configured defaults apply',
        responses: answer,
        errors: [404],
      },
      handler: async (req, admin) => {
        const subject = req.params.subject!;
        const kind = await requireSubject(store, subject);
        const hadOverrides = await store.clearRateLimits(subject);
        await audit(deps, admin, req, 'limits.clear', subject, { kind, had_overrides: hadOverrides });
        return { kind: 'json', body: limitsView(deps, subject, kind, await store.getRateLimits(subject)) };
      },
    }),
  ];
}
