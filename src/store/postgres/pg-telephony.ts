/**
 * What nodes share besides money, on the PostgreSQL store: realtime client secrets (hash only, used once),
 * server secrets (the key that signs telephony call tokens, made once for the whole cluster), each account's
 * webhook endpoint, and one record per finished phone call.
 */
import type pg from 'pg';
import type { Store } from '../store.js';
import { nowIso, transaction } from './pg-db.js';
import { toCall, toClientSecret, toWebhook, type CallRow, type SecretRow, type WebhookRow } from '../store-rows.js';

type TelephonyMethods = Pick<Store, 'createClientSecret' | 'consumeClientSecret' | 'serverSecret' | 'getWebhook' | 'setWebhook' | 'recordCall' | 'listCalls'>;

export function pgTelephony(pool: pg.Pool): TelephonyMethods {
  return {
    async createClientSecret(secret, now) {
      await transaction(pool, async (db) => {
        // Expired secrets are dropped as new ones are minted: the table holds at most a few minutes of mints.
        await db.query('DELETE FROM client_secrets WHERE expires_at <= $1', [now]);
        await db.query(
          'INSERT INTO client_secrets (secret_hash, account_id, key_id, shape, session_json, expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
          [secret.secretHash, secret.accountId, secret.keyId, secret.shape, JSON.stringify(secret.session), secret.expiresAt, new Date(now).toISOString()],
        );
      });
    },
    async consumeClientSecret(secretHash) {
      // One statement: two upgrades racing on two nodes with one secret cannot both get the row (single use).
      const { rows } = await pool.query<SecretRow>('DELETE FROM client_secrets WHERE secret_hash = $1 RETURNING *', [secretHash]);
      return rows[0] && toClientSecret(rows[0]);
    },
    async serverSecret(name, create) {
      const existing = await pool.query<{ value: string }>('SELECT value FROM server_secrets WHERE name = $1', [name]);
      if (existing.rows[0]) return existing.rows[0].value;
      // ON CONFLICT DO NOTHING then read: nodes creating the secret at once agree on the first one written.
      await pool.query('INSERT INTO server_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING', [name, create(), nowIso()]);
      const { rows } = await pool.query<{ value: string }>('SELECT value FROM server_secrets WHERE name = $1', [name]);
      return rows[0]!.value;
    },
    async getWebhook(accountId) {
      const { rows } = await pool.query<WebhookRow>('SELECT * FROM account_webhooks WHERE account_id = $1', [accountId]);
      const row = rows[0];
      return row && toWebhook(row);
    },
    async setWebhook(accountId, webhook) {
      if (!webhook) {
        await pool.query('DELETE FROM account_webhooks WHERE account_id = $1', [accountId]);
        return;
      }
      await pool.query(
        `INSERT INTO account_webhooks (account_id, url, secret, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (account_id) DO UPDATE SET url = excluded.url, secret = excluded.secret, updated_at = excluded.updated_at`,
        [accountId, webhook.url, webhook.secret, nowIso()],
      );
    },
    async recordCall(call) {
      await pool.query(
        `INSERT INTO calls (id, account_id, key_id, carrier, mode, carrier_call_id, started_at, ended_at, duration_ms, turns,
           caller_seconds, characters_synthesized, characters_translated, cost_micros, end_reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
        [
          call.id,
          call.accountId,
          call.keyId,
          call.carrier,
          call.mode,
          call.carrierCallId,
          call.startedAt,
          call.endedAt,
          call.durationMs,
          call.turns,
          call.callerSeconds,
          call.charactersSynthesized,
          call.charactersTranslated,
          call.costMicros,
          call.endReason,
        ],
      );
    },
    async listCalls(filter = {}) {
      const params: (string | number)[] = [];
      let sql = 'SELECT * FROM calls';
      if (filter.accountId) {
        params.push(filter.accountId);
        sql += ` WHERE account_id = $${params.length}`;
      }
      // The last N calls by start (the (account_id, started_at) index read backwards), put back in ascending order.
      if (filter.latest !== undefined) {
        params.push(filter.latest);
        sql = `SELECT * FROM (${sql} ORDER BY started_at DESC LIMIT $${params.length}) latest`;
      }
      const { rows } = await pool.query<CallRow>(`${sql} ORDER BY started_at`, params);
      return rows.map(toCall);
    },
  };
}
