/**
 * Accounts, API keys (by hash, never the key) and rate-limit overrides on the PostgreSQL store. Balance
 * changes are one UPDATE … SET balance = balance + $1: the addition happens inside PostgreSQL under the
 * row's lock, so concurrent credits and debits from any number of nodes never lose an update.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Account, ApiKeyRecord, Store } from '../store.js';
import { assertSafeInteger, nowIso, transaction, type Queryable } from './pg-db.js';
import { toAccount, toFoundKey, toKey, toOverrides, type AccountRow, type FoundKeyRow, type KeyRow, type LimitColumns } from '../store-rows.js';

type AccountMethods = Pick<
  Store,
  | 'createAccount'
  | 'getAccount'
  | 'listAccounts'
  | 'credit'
  | 'countAccounts'
  | 'createKey'
  | 'findKeyByHash'
  | 'getKey'
  | 'listKeys'
  | 'revokeKey'
  | 'inactiveKeyIds'
  | 'getRateLimits'
  | 'setRateLimits'
  | 'clearRateLimits'
>;

const newId = (prefix: string) => `${prefix}_${randomBytes(6).toString('hex')}`;

function assertLimit(value: number | null | undefined, what: string): void {
  if (value === null || value === undefined) return;
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${what} must be a non-negative integer, got ${value}`);
}

/** Adds to (or with a negative amount, takes from) the balance in one statement; throws for an unknown account. */
export async function addToBalance(db: Queryable, accountId: string, amountMicros: number): Promise<Account> {
  const { rows } = await db.query<AccountRow>(
    'UPDATE accounts SET balance_micros = balance_micros + $1 WHERE id = $2 RETURNING id, name, balance_micros, created_at',
    [amountMicros, accountId],
  );
  if (!rows[0]) throw new Error(`Unknown account: ${accountId}`);
  return toAccount(rows[0]);
}

/**
 * The given key ids that are not an active key (revoked or unknown). `lock`: inside a settlement, the active
 * keys' rows are share-locked until it commits, so a revocation running at the same moment (another node's)
 * waits for it — or, committed first, is seen here: a charge and a revocation are never both half-done.
 */
export async function inactiveKeysIn(db: Queryable, keyIds: readonly string[], lock: boolean): Promise<string[]> {
  const ids = [...new Set(keyIds)];
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM api_keys WHERE id = ANY($1::text[]) AND revoked_at IS NULL ORDER BY id${lock ? ' FOR SHARE' : ''}`,
    [ids],
  );
  const active = new Set(rows.map((r) => r.id));
  return ids.filter((id) => !active.has(id));
}

export function pgAccounts(pool: pg.Pool): AccountMethods {
  return {
    async createAccount(name, balanceMicros) {
      assertSafeInteger(balanceMicros, 'balanceMicros');
      const account: Account = { id: newId('acct'), name, balanceMicros, createdAt: nowIso() };
      await pool.query('INSERT INTO accounts (id, name, balance_micros, created_at) VALUES ($1, $2, $3, $4)', [
        account.id,
        name,
        balanceMicros,
        account.createdAt,
      ]);
      return account;
    },
    async getAccount(id) {
      const { rows } = await pool.query<AccountRow>('SELECT id, name, balance_micros, created_at FROM accounts WHERE id = $1', [id]);
      return rows[0] && toAccount(rows[0]);
    },
    async listAccounts() {
      const { rows } = await pool.query<AccountRow>('SELECT id, name, balance_micros, created_at FROM accounts ORDER BY seq');
      return rows.map(toAccount);
    },
    async credit(accountId, amountMicros) {
      assertSafeInteger(amountMicros, 'amountMicros');
      return addToBalance(pool, accountId, amountMicros);
    },
    async countAccounts() {
      const { rows } = await pool.query<{ n: number }>('SELECT COUNT(*) AS n FROM accounts');
      return rows[0]!.n;
    },

    async createKey(accountId, keyHash, label) {
      const key: ApiKeyRecord = { id: newId('key'), accountId, label, createdAt: nowIso(), revokedAt: null };
      await pool.query('INSERT INTO api_keys (id, account_id, key_hash, label, created_at) VALUES ($1, $2, $3, $4, $5)', [
        key.id,
        accountId,
        keyHash,
        label,
        key.createdAt,
      ]);
      return key;
    },
    async findKeyByHash(keyHash) {
      // One indexed read per (uncached) authentication: the key, its account and both limit overrides.
      const { rows } = await pool.query<FoundKeyRow>(
        `SELECT k.id, k.account_id, k.label, k.created_at, k.revoked_at, k.key_hash,
                a.name AS a_name, a.balance_micros AS a_balance, a.created_at AS a_created,
                al.requests_per_minute AS a_rpm, al.tokens_per_minute AS a_tpm, al.concurrent AS a_conc,
                kl.requests_per_minute AS k_rpm, kl.tokens_per_minute AS k_tpm, kl.concurrent AS k_conc
           FROM api_keys k JOIN accounts a ON a.id = k.account_id
           LEFT JOIN rate_limits al ON al.subject = a.id
           LEFT JOIN rate_limits kl ON kl.subject = k.id
          WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
        [keyHash],
      );
      return rows[0] && toFoundKey(rows[0]);
    },
    async getKey(keyId) {
      const { rows } = await pool.query<KeyRow>('SELECT id, account_id, label, created_at, revoked_at FROM api_keys WHERE id = $1', [keyId]);
      return rows[0] && toKey(rows[0]);
    },
    async listKeys(accountId) {
      const { rows } =
        accountId === undefined
          ? await pool.query<KeyRow>('SELECT id, account_id, label, created_at, revoked_at FROM api_keys ORDER BY seq')
          : await pool.query<KeyRow>('SELECT id, account_id, label, created_at, revoked_at FROM api_keys WHERE account_id = $1 ORDER BY seq', [accountId]);
      return rows.map(toKey);
    },
    async revokeKey(keyId) {
      // The row is locked first and stamped after: a settlement holding it (FOR SHARE, inactiveKeysIn) commits
      // before, with an earlier created_at, so no charge of the key is ever stamped after its revoked_at.
      return transaction(pool, async (db) => {
        const { rows } = await db.query('SELECT id FROM api_keys WHERE id = $1 AND revoked_at IS NULL FOR UPDATE', [keyId]);
        if (rows.length === 0) return false;
        await db.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2', [nowIso(), keyId]);
        return true;
      });
    },
    async inactiveKeyIds(keyIds) {
      if (keyIds.length === 0) return [];
      return inactiveKeysIn(pool, keyIds, false);
    },

    async getRateLimits(subject) {
      const { rows } = await pool.query<LimitColumns>('SELECT requests_per_minute, tokens_per_minute, concurrent FROM rate_limits WHERE subject = $1', [
        subject,
      ]);
      return toOverrides(rows[0]);
    },
    async setRateLimits(subject, changes) {
      assertLimit(changes.requestsPerMinute, 'requestsPerMinute');
      assertLimit(changes.tokensPerMinute, 'tokensPerMinute');
      assertLimit(changes.concurrent, 'concurrent');
      // One upsert, each column kept or replaced inside PostgreSQL: two admins setting different fields at
      // the same moment both keep their change (no read-modify-write in JS).
      const keep = (v: number | null | undefined) => v === undefined;
      const { rows } = await pool.query<LimitColumns>(
        `INSERT INTO rate_limits AS r (subject, requests_per_minute, tokens_per_minute, concurrent) VALUES ($1, $2, $3, $4)
         ON CONFLICT (subject) DO UPDATE SET
           requests_per_minute = CASE WHEN $5 THEN r.requests_per_minute ELSE excluded.requests_per_minute END,
           tokens_per_minute   = CASE WHEN $6 THEN r.tokens_per_minute ELSE excluded.tokens_per_minute END,
           concurrent          = CASE WHEN $7 THEN r.concurrent ELSE excluded.concurrent END
         RETURNING requests_per_minute, tokens_per_minute, concurrent`,
        [
          subject,
          changes.requestsPerMinute ?? null,
          changes.tokensPerMinute ?? null,
          changes.concurrent ?? null,
          keep(changes.requestsPerMinute),
          keep(changes.tokensPerMinute),
          keep(changes.concurrent),
        ],
      );
      return toOverrides(rows[0]);
    },
    async clearRateLimits(subject) {
      const result = await pool.query('DELETE FROM rate_limits WHERE subject = $1', [subject]);
      return (result.rowCount ?? 0) > 0;
    },
  };
}
