/**
 * The admin API's state on the PostgreSQL store: admin keys (by hash, never the key), the audit trail of
 * mutating admin calls (newest first by insertion), and the per-day usage report, summed by PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { AdminAuditEntry, AdminKeyRecord, Store } from '../store.js';
import { nowIso } from './pg-db.js';
import { toAdminKey, toAudit, toDay, type AdminKeyRow, type AuditRow, type DayRow } from '../store-rows.js';

type AdminMethods = Pick<
  Store,
  'createAdminKey' | 'findAdminKeyByHash' | 'listAdminKeys' | 'revokeAdminKey' | 'countAdminKeys' | 'recordAdminAudit' | 'listAdminAudit' | 'dailyUsage'
>;

const KEY_COLUMNS = 'id, key_hash, label, created_at, revoked_at';

export function pgAdmin(pool: pg.Pool): AdminMethods {
  return {
    async createAdminKey(keyHash, label) {
      const key: AdminKeyRecord = { id: `adm_${randomBytes(6).toString('hex')}`, label, createdAt: nowIso(), revokedAt: null };
      await pool.query('INSERT INTO admin_keys (id, key_hash, label, created_at) VALUES ($1, $2, $3, $4)', [key.id, keyHash, label, key.createdAt]);
      return key;
    },
    async findAdminKeyByHash(keyHash) {
      const { rows } = await pool.query<AdminKeyRow>(`SELECT ${KEY_COLUMNS} FROM admin_keys WHERE key_hash = $1 AND revoked_at IS NULL`, [keyHash]);
      return rows[0] && { key: toAdminKey(rows[0]), keyHash: rows[0].key_hash };
    },
    async listAdminKeys() {
      const { rows } = await pool.query<AdminKeyRow>(`SELECT ${KEY_COLUMNS} FROM admin_keys ORDER BY seq`);
      return rows.map(toAdminKey);
    },
    async revokeAdminKey(id) {
      const result = await pool.query('UPDATE admin_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [nowIso(), id]);
      return (result.rowCount ?? 0) > 0;
    },
    async countAdminKeys() {
      const { rows } = await pool.query<{ n: number }>('SELECT COUNT(*) AS n FROM admin_keys');
      return rows[0]!.n;
    },
    async recordAdminAudit(entry) {
      const row: AdminAuditEntry = { id: `aud_${randomBytes(8).toString('hex')}`, at: nowIso(), ...entry };
      await pool.query('INSERT INTO admin_audit (id, at, admin_key_id, action, target, detail, request_id) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
        row.id,
        row.at,
        row.adminKeyId,
        row.action,
        row.target,
        JSON.stringify(row.detail),
        row.requestId,
      ]);
      return row;
    },
    async listAdminAudit(limit) {
      // seq is insertion order: two entries can share a millisecond of `at`.
      const { rows } = await pool.query<AuditRow>(
        'SELECT id, at, admin_key_id, action, target, detail, request_id FROM admin_audit ORDER BY seq DESC LIMIT $1',
        [limit],
      );
      return rows.map(toAudit);
    },
    async dailyUsage(accountId, sinceDate) {
      // created_at is ISO 8601 UTC text: its first 10 characters are the UTC day, and it compares as text.
      const { rows } = await pool.query<DayRow>(
        `SELECT substr(created_at, 1, 10) AS day,
                COUNT(DISTINCT request_id)::bigint AS requests,
                SUM(cost_micros)::bigint AS cost_micros,
                COALESCE(SUM(quantity) FILTER (WHERE unit = 'second'), 0) AS seconds,
                COALESCE(SUM(quantity) FILTER (WHERE unit = 'character'), 0) AS characters,
                COALESCE(SUM(quantity) FILTER (WHERE unit = 'token'), 0) AS tokens
           FROM usage_records
          WHERE account_id = $1 AND created_at >= $2
          GROUP BY day
          ORDER BY day`,
        [accountId, sinceDate],
      );
      return rows.map(toDay);
    },
  };
}
