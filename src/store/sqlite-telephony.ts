/**
 * Telephony state on the embedded SQLite store: server secrets (the key that signs call tokens, made once
 * and shared by every process on the file), each account's webhook endpoint, and one record per finished
 * call (duration, turns, usage) for `npm run keys -- usage`.
 */
import type Database from 'better-sqlite3';
import type { AccountWebhook, CallRecord } from './store.js';
import { toCall, toWebhook, type CallRow, type WebhookRow } from './store-rows.js';

/** Appended to the store's migrations: new tables only. */
export const TELEPHONY_MIGRATION = `
  CREATE TABLE server_secrets (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE TABLE account_webhooks (
    account_id TEXT PRIMARY KEY REFERENCES accounts(id),
    url        TEXT NOT NULL,
    secret     TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE TABLE calls (
    id                    TEXT PRIMARY KEY,
    account_id            TEXT NOT NULL REFERENCES accounts(id),
    key_id                TEXT NOT NULL,
    carrier               TEXT NOT NULL,
    mode                  TEXT NOT NULL,
    carrier_call_id       TEXT,
    started_at            TEXT NOT NULL,
    ended_at              TEXT NOT NULL,
    duration_ms           INTEGER NOT NULL,
    turns                 INTEGER NOT NULL,
    caller_seconds        REAL NOT NULL,
    characters_synthesized INTEGER NOT NULL,
    characters_translated INTEGER NOT NULL,
    cost_micros           INTEGER NOT NULL,
    end_reason            TEXT NOT NULL
  );
  CREATE INDEX idx_calls_account ON calls(account_id, started_at);
`;

export interface SqliteTelephony {
  serverSecret(name: string, create: () => string): string;
  getWebhook(accountId: string): AccountWebhook | undefined;
  setWebhook(accountId: string, webhook: { url: string; secret: string } | null): void;
  recordCall(call: CallRecord): void;
  listCalls(filter: { accountId?: string; latest?: number }): CallRecord[];
}

export function sqliteTelephony(db: Database.Database): SqliteTelephony {
  // INSERT OR IGNORE then read: two processes creating the secret at once agree on the first one written.
  const insertSecret = db.prepare('INSERT OR IGNORE INTO server_secrets (name, value, created_at) VALUES (?, ?, ?)');
  const getSecret = db.prepare<[string], { value: string }>('SELECT value FROM server_secrets WHERE name = ?');
  const getWebhook = db.prepare<[string], WebhookRow>('SELECT * FROM account_webhooks WHERE account_id = ?');
  const upsertWebhook = db.prepare(
    'INSERT INTO account_webhooks (account_id, url, secret, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(account_id) DO UPDATE SET url = excluded.url, secret = excluded.secret, updated_at = excluded.updated_at',
  );
  const deleteWebhook = db.prepare('DELETE FROM account_webhooks WHERE account_id = ?');
  const insertCall = db.prepare(
    `INSERT INTO calls (id, account_id, key_id, carrier, mode, carrier_call_id, started_at, ended_at, duration_ms, turns,
      caller_seconds, characters_synthesized, characters_translated, cost_micros, end_reason)
     VALUES (@id, @accountId, @keyId, @carrier, @mode, @carrierCallId, @startedAt, @endedAt, @durationMs, @turns,
      @callerSeconds, @charactersSynthesized, @charactersTranslated, @costMicros, @endReason)`,
  );
  const callsOf = db.prepare<[string], CallRow>('SELECT * FROM calls WHERE account_id = ? ORDER BY started_at');
  const allCalls = db.prepare<[], CallRow>('SELECT * FROM calls ORDER BY started_at');
  // The last N calls by start (the (account_id, started_at) index read backwards), put back in ascending order.
  const latestOf = db.prepare<[string, number], CallRow>(
    'SELECT * FROM (SELECT * FROM calls WHERE account_id = ? ORDER BY started_at DESC LIMIT ?) ORDER BY started_at',
  );
  const latestAll = db.prepare<[number], CallRow>('SELECT * FROM (SELECT * FROM calls ORDER BY started_at DESC LIMIT ?) ORDER BY started_at');
  return {
    serverSecret(name, create) {
      const existing = getSecret.get(name);
      if (existing) return existing.value;
      insertSecret.run(name, create(), new Date().toISOString());
      return getSecret.get(name)!.value;
    },
    getWebhook(accountId) {
      const row = getWebhook.get(accountId);
      return row && toWebhook(row);
    },
    setWebhook(accountId, webhook) {
      if (webhook) upsertWebhook.run(accountId, webhook.url, webhook.secret, new Date().toISOString());
      else deleteWebhook.run(accountId);
    },
    recordCall(call) {
      insertCall.run(call);
    },
    listCalls(filter) {
      const { accountId, latest } = filter;
      if (latest !== undefined) return (accountId ? latestOf.all(accountId, latest) : latestAll.all(latest)).map(toCall);
      return (accountId ? callsOf.all(accountId) : allCalls.all()).map(toCall);
    },
  };
}
