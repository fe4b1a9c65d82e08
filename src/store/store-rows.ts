/**
 * The stores' rows and their mapping to the Store's records. SQLite and PostgreSQL share one schema shape
 * (the same table and column names, timestamps as ISO text, money as integer micros), so a row read from
 * either maps to its record in one place; only the SQL that reads it differs.
 */
import type {
  Account,
  AccountWebhook,
  AdminAuditEntry,
  AdminKeyRecord,
  ApiKeyRecord,
  CallRecord,
  ClientSecretRecord,
  DailyUsage,
  FoundKey,
  LimitOverrides,
  UsageRecord,
} from './store.js';

export interface AccountRow {
  id: string;
  name: string;
  balance_micros: number;
  created_at: string;
}
export interface KeyRow {
  id: string;
  account_id: string;
  label: string;
  created_at: string;
  revoked_at: string | null;
}
/** A rate_limits row's columns (absent when the subject has no overrides). */
export interface LimitColumns {
  requests_per_minute: number | null;
  tokens_per_minute: number | null;
  concurrent: number | null;
}
/** The key lookup's join: the key, its account (`a_`) and both limit rows (`a_`, `k_`). */
export interface FoundKeyRow extends KeyRow {
  key_hash: string;
  a_name: string;
  a_balance: number;
  a_created: string;
  a_rpm: number | null;
  a_tpm: number | null;
  a_conc: number | null;
  k_rpm: number | null;
  k_tpm: number | null;
  k_conc: number | null;
}
export interface UsageRow {
  id: number;
  request_id: string;
  account_id: string;
  key_id: string;
  model: string;
  unit: string;
  quantity: number;
  unit_price_micros: number;
  cost_micros: number;
  created_at: string;
}
export interface SecretRow {
  secret_hash: string;
  account_id: string;
  key_id: string;
  shape: string;
  session_json: string;
  expires_at: number;
}
export interface WebhookRow {
  account_id: string;
  url: string;
  secret: string;
  updated_at: string;
}
export interface CallRow {
  id: string;
  account_id: string;
  key_id: string;
  carrier: string;
  mode: string;
  carrier_call_id: string | null;
  started_at: string;
  ended_at: string;
  duration_ms: number;
  turns: number;
  caller_seconds: number;
  characters_synthesized: number;
  characters_translated: number;
  cost_micros: number;
  end_reason: string;
}
export interface AdminKeyRow {
  id: string;
  key_hash: string;
  label: string;
  created_at: string;
  revoked_at: string | null;
}
export interface AuditRow {
  id: string;
  at: string;
  admin_key_id: string;
  action: string;
  target: string;
  detail: string;
  request_id: string;
}
export interface DayRow {
  day: string;
  requests: number;
  cost_micros: number;
  seconds: number;
  characters: number;
  tokens: number;
}

export const toAccount = (r: AccountRow): Account => ({ id: r.id, name: r.name, balanceMicros: r.balance_micros, createdAt: r.created_at });

export const toKey = (r: KeyRow): ApiKeyRecord => ({ id: r.id, accountId: r.account_id, label: r.label, createdAt: r.created_at, revokedAt: r.revoked_at });

export function toOverrides(row: LimitColumns | undefined): LimitOverrides {
  return { requestsPerMinute: row?.requests_per_minute ?? null, tokensPerMinute: row?.tokens_per_minute ?? null, concurrent: row?.concurrent ?? null };
}

export const toFoundKey = (r: FoundKeyRow): FoundKey => ({
  key: toKey(r),
  keyHash: r.key_hash,
  account: { id: r.account_id, name: r.a_name, balanceMicros: r.a_balance, createdAt: r.a_created },
  limits: {
    account: toOverrides({ requests_per_minute: r.a_rpm, tokens_per_minute: r.a_tpm, concurrent: r.a_conc }),
    key: toOverrides({ requests_per_minute: r.k_rpm, tokens_per_minute: r.k_tpm, concurrent: r.k_conc }),
  },
});

export const toUsage = (r: UsageRow): UsageRecord => ({
  id: r.id,
  requestId: r.request_id,
  accountId: r.account_id,
  keyId: r.key_id,
  model: r.model,
  unit: r.unit as UsageRecord['unit'],
  quantity: r.quantity,
  unitPriceMicros: r.unit_price_micros,
  costMicros: r.cost_micros,
  createdAt: r.created_at,
});

export const toClientSecret = (r: SecretRow): ClientSecretRecord => ({
  secretHash: r.secret_hash,
  accountId: r.account_id,
  keyId: r.key_id,
  shape: r.shape as ClientSecretRecord['shape'],
  session: JSON.parse(r.session_json) as Record<string, unknown>,
  expiresAt: r.expires_at,
});

export const toWebhook = (r: WebhookRow): AccountWebhook => ({ accountId: r.account_id, url: r.url, secret: r.secret, updatedAt: r.updated_at });

export const toCall = (r: CallRow): CallRecord => ({
  id: r.id,
  accountId: r.account_id,
  keyId: r.key_id,
  carrier: r.carrier,
  mode: r.mode,
  carrierCallId: r.carrier_call_id,
  startedAt: r.started_at,
  endedAt: r.ended_at,
  durationMs: r.duration_ms,
  turns: r.turns,
  callerSeconds: r.caller_seconds,
  charactersSynthesized: r.characters_synthesized,
  charactersTranslated: r.characters_translated,
  costMicros: r.cost_micros,
  endReason: r.end_reason,
});

export const toAdminKey = (r: AdminKeyRow): AdminKeyRecord => ({ id: r.id, label: r.label, createdAt: r.created_at, revokedAt: r.revoked_at });

export const toAudit = (r: AuditRow): AdminAuditEntry => ({
  id: r.id,
  at: r.at,
  adminKeyId: r.admin_key_id,
  action: r.action,
  target: r.target,
  detail: JSON.parse(r.detail) as Record<string, unknown>,
  requestId: r.request_id,
});

export const toDay = (r: DayRow): DailyUsage => ({
  date: r.day,
  requests: r.requests,
  costMicros: r.cost_micros,
  seconds: r.seconds,
  characters: r.characters,
  tokens: r.tokens,
});
