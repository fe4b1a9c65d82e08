/**
 * What the admin console reads without changing anything: who the admin key is, an account's usage per
 * day, the models and whether each is ready, and the audit trail.
 */
import { formatUnits } from '../../billing/units.js';
import type { DailyUsage } from '../../store/store.js';
import { jsonContent } from '../schemas/responses.js';
import { AdminIdentitySchema, AdminModelListSchema, AuditListSchema, AuditQuerySchema, UsageQuerySchema, UsageReportSchema } from '../schemas/admin.js';
import type { RouteDef } from '../types.js';
import { parseRequest } from '../validation.js';
import { adminRoute, type AdminDeps } from './admin-route.js';
import { requireAccount } from './views.js';

const DAY_MS = 86_400_000;
const NOT_SERVED = 'no engine serves this model on this server (see KUMA_MODELS_MANIFEST)';

export function reportRoutes(deps: AdminDeps): RouteDef[] {
  const { store } = deps;
  const now = deps.now ?? Date.now;
  return [
    adminRoute(deps, {
      method: 'GET',
      path: '/whoami',
      openapi: {
        operationId: 'adminWhoami',
        summary: 'The admin key this request presented (its id and label)',
        responses: { 200: { description: 'The admin key', content: [jsonContent(AdminIdentitySchema)] } },
      },
      handler: async (_req, admin) => ({ kind: 'json', body: { id: admin.id, label: admin.label, created_at: admin.createdAt } }),
    }),
    adminRoute(deps, {
      method: 'GET',
      path: '/accounts/:id/usage',
      openapi: {
        operationId: 'adminAccountUsage',
        summary: "An account's usage per UTC day: `?days=` days (1–366, default 30) ending today, oldest first, days without usage as zeros",
        responses: { 200: { description: 'One entry per day, and the total cost', content: [jsonContent(UsageReportSchema)] } },
        errors: [400, 404],
      },
      handler: async (req) => {
        const { days } = parseRequest(UsageQuerySchema, Object.fromEntries(req.query));
        const account = await requireAccount(store, req.params.id!);
        const today = Math.floor(now() / DAY_MS) * DAY_MS;
        const dates = Array.from({ length: days }, (_, i) => new Date(today - (days - 1 - i) * DAY_MS).toISOString().slice(0, 10));
        const byDate = new Map((await store.dailyUsage(account.id, dates[0]!)).map((d) => [d.date, d]));
        const entries = dates.map((date) => dayView(byDate.get(date) ?? { date, requests: 0, costMicros: 0, seconds: 0, characters: 0, tokens: 0 }));
        const total = entries.reduce((sum, d) => sum + d.cost_micros, 0);
        return { kind: 'json', body: { account_id: account.id, days: entries, total_cost_micros: total, total_cost: formatUnits(total) } };
      },
    }),
    adminRoute(deps, {
      method: 'GET',
      path: '/models',
      openapi: {
        operationId: 'adminListModels',
        summary: 'The models served (as GET /openai/v1/models lists them), each with its engine and whether it is loaded and warm',
        responses: { 200: { description: 'The models and their readiness', content: [jsonContent(AdminModelListSchema)] } },
      },
      handler: async () => {
        const data = deps.catalog.list().map((model) => {
          const state = deps.engines?.modelReadiness(model.id);
          return {
            id: model.id,
            capability: model.capability,
            legacy: model.legacy,
            engine: deps.engines?.get(model.id)?.entry.engine ?? null,
            ready: state?.ready ?? false,
            ...(state?.ready ? {} : { detail: state?.detail ?? NOT_SERVED }),
          };
        });
        return { kind: 'json', body: { object: 'list', ready: data.every((m) => m.ready), data } };
      },
    }),
    adminRoute(deps, {
      method: 'GET',
      path: '/audit',
      openapi: {
        operationId: 'adminListAudit',
        summary: 'The audit trail of mutating admin calls, newest first: `?limit=` entries (1–1000, default 100)',
        responses: { 200: { description: 'The latest entries', content: [jsonContent(AuditListSchema)] } },
        errors: [400],
      },
      handler: async (req) => {
        const { limit } = parseRequest(AuditQuerySchema, Object.fromEntries(req.query));
        const data = (await store.listAdminAudit(limit)).map((e) => ({
          id: e.id,
          at: e.at,
          admin_key_id: e.adminKeyId,
          action: e.action,
          target: e.target,
          detail: e.detail,
          request_id: e.requestId,
        }));
        return { kind: 'json', body: { object: 'list', data } };
      },
    }),
  ];
}

function dayView(d: DailyUsage) {
  return {
    date: d.date,
    requests: d.requests,
    cost_micros: d.costMicros,
    cost: formatUnits(d.costMicros),
    // Sums of REAL quantities: 0.1 + 0.2 must not show as 0.30000000000000004 (seconds are billed to the ms).
    seconds: Math.round(d.seconds * 1000) / 1000,
    characters: d.characters,
    tokens: d.tokens,
  };
}
