/**
 * An account's recent records over the admin API, newest first: its finished phone calls and its usage
 * rows (one per billed amount; a request may have several) — what `npm run keys -- usage ACCOUNT_ID`
 * prints. The store reads only the last `?limit=` of each.
 */
import { formatUnits } from '../../billing/units.js';
import type { CallRecord, UsageRecord } from '../../store/store.js';
import { AdminCallListSchema, AdminUsageRecordListSchema, RecordsQuerySchema } from '../schemas/admin-records.js';
import { jsonContent } from '../schemas/responses.js';
import type { RouteDef } from '../types.js';
import { parseRequest } from '../validation.js';
import { adminRoute, type AdminDeps } from './admin-route.js';
import { requireAccount } from './views.js';

function callView(c: CallRecord) {
  return {
    id: c.id,
    carrier: c.carrier,
    mode: c.mode,
    carrier_call_id: c.carrierCallId,
    started_at: c.startedAt,
    ended_at: c.endedAt,
    duration_ms: c.durationMs,
    turns: c.turns,
    caller_seconds: c.callerSeconds,
    characters_synthesized: c.charactersSynthesized,
    characters_translated: c.charactersTranslated,
    cost_micros: c.costMicros,
    cost: formatUnits(c.costMicros),
    end_reason: c.endReason,
    key_id: c.keyId,
  };
}

function usageRecordView(r: UsageRecord) {
  return {
    id: r.id,
    created_at: r.createdAt,
    request_id: r.requestId,
    key_id: r.keyId,
    model: r.model,
    unit: r.unit,
    quantity: r.quantity,
    unit_price_micros: r.unitPriceMicros,
    cost_micros: r.costMicros,
    cost: formatUnits(r.costMicros),
  };
}

export function recordRoutes(deps: AdminDeps): RouteDef[] {
  const { store } = deps;
  return [
    adminRoute(deps, {
      method: 'GET',
      path: '/accounts/:id/calls',
      openapi: {
        operationId: 'adminListCalls',
        summary: "The account's latest finished phone calls, newest first: `?limit=` calls (1–500, default 50)",
        responses: { 200: { description: 'The calls, with what each processed and cost', content: [jsonContent(AdminCallListSchema)] } },
        errors: [400, 404],
      },
      handler: async (req) => {
        const { limit } = parseRequest(RecordsQuerySchema, Object.fromEntries(req.query));
        const account = await requireAccount(store, req.params.id!);
        const calls = await store.listCalls({ accountId: account.id, latest: limit });
        return { kind: 'json', body: { object: 'list', data: calls.reverse().map(callView) } };
      },
    }),
    adminRoute(deps, {
      method: 'GET',
      path: '/accounts/:id/usage/records',
      openapi: {
        operationId: 'adminListUsageRecords',
        summary: "The account's latest usage records (one per billed amount), newest first: `?limit=` records (1–500, default 50)",
        responses: { 200: { description: 'The records', content: [jsonContent(AdminUsageRecordListSchema)] } },
        errors: [400, 404],
      },
      handler: async (req) => {
        const { limit } = parseRequest(RecordsQuerySchema, Object.fromEntries(req.query));
        const account = await requireAccount(store, req.params.id!);
        const rows = await store.listUsage({ accountId: account.id, latest: limit });
        return { kind: 'json', body: { object: 'list', data: rows.reverse().map(usageRecordView) } };
      },
    }),
  ];
}
