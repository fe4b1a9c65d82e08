/**
 * The admin API's state on the embedded SQLite store: admin keys (by hash, never the key), the audit trail
 * of mutating admin calls, and the per-day usage report, summed by SQLite over usage_records so that a
 * year of records never crosses into JavaScript row by row.
 */
import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { AdminAuditEntry, AdminKeyRecord, Store } from './store.js';
import { toAdminKey, toAudit, toDay, type AdminKeyRow, type AuditRow, type DayRow } from './store-rows.js';

/** Appended to the store's migrations. */
export const ADMIN_MIGRATION = `
  CREATE TABLE admin_keys (
    id         TEXT PRIMARY KEY,
    key_hash   TEXT NOT NULL UNIQUE,
    label      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  CREATE TABLE admin_audit (
    id           TEXT PRIMARY KEY,
    at           TEXT NOT NULL,
    admin_key_id TEXT NOT NULL,
    action       TEXT NOT NULL,
    target       TEXT NOT NULL,
    detail       TEXT NOT NULL,
    request_id   TEXT NOT NULL
  );
  -- The usage report reads one account's records from a date on: this index serves exactly that range.
  CREATE INDEX idx_usage_account_time ON usage_records(account_id, created_at);
`;

type AdminMethods = Pick<
  Store,
  'createAdminKey' | 'findAdminKeyByHash' | 'listAdminKeys' | 'revokeAdminKey' | 'countAdminKeys' | 'recordAdminAudit' | 'listAdminAudit' | 'dailyUsage'
>;

/**
 * The admin methods of the Store. `durable` is the store's wait for the WAL's fdatasync: every write the
 * caller is told about (a key shown to the operator, an audit row) is on disk before its promise resolves.
 */
export function sqliteAdmin(db: Database.Database, durable: <T>(value: T) => Promise<T>): AdminMethods {
  const stmt = {
    insertKey: db.prepare('INSERT INTO admin_keys (id, key_hash, label, created_at) VALUES (?, ?, ?, ?)'),
    findKey: db.prepare<[string], AdminKeyRow>('SELECT * FROM admin_keys WHERE key_hash = ? AND revoked_at IS NULL'),
    listKeys: db.prepare<[], AdminKeyRow>('SELECT * FROM admin_keys ORDER BY rowid'),
    revokeKey: db.prepare('UPDATE admin_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    countKeys: db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM admin_keys'),
    insertAudit: db.prepare('INSERT INTO admin_audit (id, at, admin_key_id, action, target, detail, request_id) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    // rowid order is insertion order: newest first without an index on `at` (two rows can share a millisecond).
    listAudit: db.prepare<[number], AuditRow>('SELECT * FROM admin_audit ORDER BY rowid DESC LIMIT ?'),
    // created_at is ISO 8601 UTC, so its first 10 characters are the UTC day and it compares as text.
    dailyUsage: db.prepare<[string, string], DayRow>(
      `SELECT substr(created_at, 1, 10) AS day,
              COUNT(DISTINCT request_id) AS requests,
              SUM(cost_micros) AS cost_micros,
              TOTAL(CASE WHEN unit = 'second' THEN quantity END) AS seconds,
              TOTAL(CASE WHEN unit = 'character' THEN quantity END) AS characters,
              TOTAL(CASE WHEN unit = 'token' THEN quantity END) AS tokens
         FROM usage_records
        WHERE account_id = ? AND created_at >= ?
        GROUP BY day
        ORDER BY day`,
    ),
  };

  return {
    async createAdminKey(keyHash, label) {
      const key: AdminKeyRecord = { id: `adm_${randomBytes(6).toString('hex')}`, label, createdAt: new Date().toISOString(), revokedAt: null };
      stmt.insertKey.run(key.id, keyHash, key.label, key.createdAt);
      return durable(key);
    },
    async findAdminKeyByHash(keyHash) {
      const row = stmt.findKey.get(keyHash);
      return row && { key: toAdminKey(row), keyHash: row.key_hash };
    },
    async listAdminKeys() {
      return stmt.listKeys.all().map(toAdminKey);
    },
    async revokeAdminKey(id) {
      return durable(stmt.revokeKey.run(new Date().toISOString(), id).changes > 0);
    },
    async countAdminKeys() {
      return stmt.countKeys.get()!.n;
    },
    async recordAdminAudit(entry) {
      const row: AdminAuditEntry = { id: `aud_${randomBytes(8).toString('hex')}`, at: new Date().toISOString(), ...entry };
      stmt.insertAudit.run(row.id, row.at, row.adminKeyId, row.action, row.target, JSON.stringify(row.detail), row.requestId);
      return durable(row);
    },
    async listAdminAudit(limit) {
      return stmt.listAudit.all(limit).map(toAudit);
    },
    async dailyUsage(accountId, sinceDate) {
      return stmt.dailyUsage.all(accountId, sinceDate).map(toDay);
    },
  };
}
