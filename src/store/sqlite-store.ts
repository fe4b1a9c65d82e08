/**
 * The embedded Store: accounts, API keys (by hash) and the usage ledger in one SQLite file through
 * better-sqlite3 (holds, limits, client secrets, telephony and the admin API's tables in the sqlite-* files). Several processes (server workers, the keys CLI) may open the same file at once.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { settlementIdOf, type Account, type ApiKeyRecord, type NewUsageRecord, type RecordUsageOptions, type Store } from './store.js';
import { WalSync } from './wal-sync.js';
import { HOLDS_MIGRATION, sqliteHolds } from './sqlite-holds.js';
import { RATE_LIMITS_MIGRATION, sqliteRateLimits } from './sqlite-rate-limits.js';
import { toAccount, toFoundKey, toKey, toUsage, type AccountRow, type FoundKeyRow, type KeyRow, type UsageRow } from './store-rows.js';
import { CLIENT_SECRETS_MIGRATION, sqliteClientSecrets } from './sqlite-client-secrets.js';
import { sqliteTelephony, TELEPHONY_MIGRATION } from './sqlite-telephony.js';
import { ADMIN_MIGRATION, sqliteAdmin } from './sqlite-admin.js';
import { KeyRevokedError } from './store-errors.js';

/** How long a connection waits for another connection's write lock before failing with SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 10_000;

/**
 * Schema migrations, applied in order; `PRAGMA user_version` holds how many have run. Append only:
 * an existing database replays just the steps it has not seen.
 */
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE accounts (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    balance_micros INTEGER NOT NULL CHECK (typeof(balance_micros) = 'integer'),
    created_at     TEXT NOT NULL
  );
  CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    key_hash   TEXT NOT NULL,
    label      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  CREATE TABLE usage_records (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id        TEXT NOT NULL,
    account_id        TEXT NOT NULL REFERENCES accounts(id),
    key_id            TEXT NOT NULL,
    model             TEXT NOT NULL,
    unit              TEXT NOT NULL CHECK (unit IN ('second', 'character', 'token')),
    quantity          REAL NOT NULL CHECK (quantity >= 0),
    unit_price_micros INTEGER NOT NULL CHECK (typeof(unit_price_micros) = 'integer'),
    cost_micros       INTEGER NOT NULL CHECK (typeof(cost_micros) = 'integer'),
    created_at        TEXT NOT NULL
  );
  -- The unique index is both the uniqueness rule and the index behind every authenticated request.
  CREATE UNIQUE INDEX idx_api_keys_key_hash ON api_keys(key_hash);
  CREATE INDEX idx_api_keys_account ON api_keys(account_id);
  CREATE INDEX idx_usage_account ON usage_records(account_id);
  CREATE INDEX idx_usage_request ON usage_records(request_id);
  `,
  HOLDS_MIGRATION,
  RATE_LIMITS_MIGRATION,
  CLIENT_SECRETS_MIGRATION,
  TELEPHONY_MIGRATION,
  ADMIN_MIGRATION,
  // Idempotent settlements (the same rule as the PostgreSQL store, src/store/postgres/pg-ledger.ts): a
  // request id is not unique (one settlement writes several rows; a call or realtime session settles many
  // times under one request id), so each row of a settlement carries the hold id it settles and its index
  // in the batch, UNIQUE together. A retried write of the same settlement inserts nothing and debits
  // nothing; rows written without a hold id (NULL, never equal) are not deduplicated.
  `
  ALTER TABLE usage_records ADD COLUMN settlement_id TEXT;
  ALTER TABLE usage_records ADD COLUMN line INTEGER;
  CREATE UNIQUE INDEX idx_usage_settlement ON usage_records(settlement_id, line);
  `,
];

const newId = (prefix: string) => `${prefix}_${randomBytes(6).toString('hex')}`;
const nowIso = () => new Date().toISOString();

function assertSafeInteger(value: number, what: string): void {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${what} must be a safe integer number of micros, got ${value}`);
}

function migrate(db: Database.Database): void {
  // BEGIN IMMEDIATE and re-reading the version inside the lock: two processes opening a fresh file at
  // the same moment must not both run the same migration.
  db.transaction(() => {
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current > MIGRATIONS.length) {
      throw new Error(`Database schema version ${current} is newer than this build supports (${MIGRATIONS.length})`);
    }
    for (let version = current; version < MIGRATIONS.length; version++) db.exec(MIGRATIONS[version]!);
    if (current !== MIGRATIONS.length) db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

export async function openSqliteStore(filePath: string): Promise<Store> {
  const inMemory = filePath === ':memory:';
  if (!inMemory) mkdirSync(path.dirname(path.resolve(filePath)), { recursive: true });
  const db = new Database(filePath);

  // Set first, so that even switching the journal mode waits for a concurrent opener instead of failing.
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  if (!inMemory) db.pragma('journal_mode = WAL');
  // Durability: a usage row committed before the HTTP response must never be lost. In WAL mode a commit
  // is written to the -wal file before COMMIT returns, so synchronous=NORMAL already survives a kill -9
  // of the process (the OS still holds the write); it could only lose the last commits on an OS crash or
  // power cut. Every write a caller is told about therefore waits for wal.sync() (an fdatasync of the WAL
  // in the thread pool, shared by all commits made before it: wal-sync.ts) before its promise resolves —
  // FULL's guarantee, without FULL's fsync on the I/O thread at every COMMIT. Holds are not synced: a
  // reservation only matters while its request runs, and a power cut ends the request too.
  db.pragma(inMemory ? 'synchronous = FULL' : 'synchronous = NORMAL');
  const wal = inMemory ? undefined : new WalSync(`${path.resolve(filePath)}-wal`);
  /** Resolves with `value` once the write that produced it is on disk. */
  const durable = async <T>(value: T): Promise<T> => {
    await wal?.sync();
    return value;
  };
  db.pragma('foreign_keys = ON');
  migrate(db);

  const stmt = {
    insertAccount: db.prepare('INSERT INTO accounts (id, name, balance_micros, created_at) VALUES (?, ?, ?, ?)'),
    getAccount: db.prepare<[string], AccountRow>('SELECT * FROM accounts WHERE id = ?'),
    listAccounts: db.prepare<[], AccountRow>('SELECT * FROM accounts ORDER BY rowid'),
    countAccounts: db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM accounts'),
    // One statement read-modify-write: the addition happens inside SQLite, never in JS, so no update is lost.
    addToBalance: db.prepare<[number, string], AccountRow>('UPDATE accounts SET balance_micros = balance_micros + ? WHERE id = ? RETURNING *'),
    insertKey: db.prepare('INSERT INTO api_keys (id, account_id, key_hash, label, created_at) VALUES (?, ?, ?, ?, ?)'),
    // One indexed read per (uncached) authentication: the key, its account and both limit overrides.
    findKeyByHash: db.prepare<[string], FoundKeyRow>(
      `SELECT k.*, a.name AS a_name, a.balance_micros AS a_balance, a.created_at AS a_created,
              al.requests_per_minute AS a_rpm, al.tokens_per_minute AS a_tpm, al.concurrent AS a_conc,
              kl.requests_per_minute AS k_rpm, kl.tokens_per_minute AS k_tpm, kl.concurrent AS k_conc
         FROM api_keys k JOIN accounts a ON a.id = k.account_id
         LEFT JOIN rate_limits al ON al.subject = a.id
         LEFT JOIN rate_limits kl ON kl.subject = k.id
        WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
    ),
    getKey: db.prepare<[string], KeyRow>('SELECT * FROM api_keys WHERE id = ?'),
    listAllKeys: db.prepare<[], KeyRow>('SELECT * FROM api_keys ORDER BY rowid'),
    listAccountKeys: db.prepare<[string], KeyRow>('SELECT * FROM api_keys WHERE account_id = ? ORDER BY rowid'),
    revokeKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    // The given ids (a JSON array) that are not an active key: one statement however many are asked about.
    inactiveKeyIds: db.prepare<[string], { id: string }>(
      `SELECT DISTINCT given.value AS id FROM json_each(?) AS given
        WHERE NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = given.value AND k.revoked_at IS NULL)`,
    ),
    // DO NOTHING on the settlement key only: CHECK, NOT NULL and foreign-key failures still abort.
    insertUsage: db.prepare(
      `INSERT INTO usage_records
         (request_id, account_id, key_id, model, unit, quantity, unit_price_micros, cost_micros, created_at, settlement_id, line)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (settlement_id, line) DO NOTHING`,
    ),
  };

  const addToBalance = (accountId: string, amountMicros: number): Account => {
    const row = stmt.addToBalance.get(amountMicros, accountId);
    if (!row) throw new Error(`Unknown account: ${accountId}`);
    return toAccount(row);
  };

  // BEGIN IMMEDIATE takes the write lock up front, so a concurrent writer waits (busy_timeout) at the
  // start rather than failing mid-transaction when a read lock cannot be upgraded.
  const holds = sqliteHolds(db);
  const rateLimits = sqliteRateLimits(db);
  const clientSecrets = sqliteClientSecrets(db);
  const telephony = sqliteTelephony(db);
  const recordUsageTx = db.transaction((records: NewUsageRecord[], options: RecordUsageOptions) => {
    // Under the write lock a revocation (any process's) is either committed before this — refused here — or after.
    if (options.requireActiveKey) {
      const inactive = stmt.inactiveKeyIds.all(JSON.stringify([...new Set(records.map((r) => r.keyId))]));
      if (inactive.length > 0) throw new KeyRevokedError(inactive[0]!.id);
    }
    // Settling a reservation: the hold goes (or, for a part, shrinks) in the same transaction as the debit,
    // so the money is never counted twice (held and debited) nor for a moment neither.
    if (options.releaseHoldId !== undefined) holds.release(options.releaseHoldId);
    const createdAt = nowIso();
    const settlementId = settlementIdOf(options);
    const debits = new Map<string, number>(records.map((r) => [r.accountId, 0]));
    for (const [line, r] of records.entries()) {
      const { changes } = stmt.insertUsage.run(
        r.requestId,
        r.accountId,
        r.keyId,
        r.model,
        r.unit,
        r.quantity,
        r.unitPriceMicros,
        r.costMicros,
        createdAt,
        settlementId,
        settlementId === null ? null : line,
      );
      // Only rows actually inserted are debited: a retried settlement costs nothing more.
      if (changes > 0) debits.set(r.accountId, debits.get(r.accountId)! + r.costMicros);
    }
    const balances: Record<string, number> = {};
    for (const [accountId, total] of debits) balances[accountId] = addToBalance(accountId, -total).balanceMicros;
    if (options.partOfHold)
      holds.shrink(
        options.partOfHold.holdId,
        [...debits.values()].reduce((a, b) => a + b, 0),
      );
    return { balances };
  });

  const revokeKeyTx = db.transaction((keyId: string) => stmt.revokeKey.run(nowIso(), keyId).changes > 0);

  return {
    async createAccount(name, balanceMicros) {
      assertSafeInteger(balanceMicros, 'balanceMicros');
      const account: Account = { id: newId('acct'), name, balanceMicros, createdAt: nowIso() };
      stmt.insertAccount.run(account.id, account.name, account.balanceMicros, account.createdAt);
      return durable(account);
    },
    async getAccount(id) {
      const row = stmt.getAccount.get(id);
      return row && toAccount(row);
    },
    async listAccounts() {
      return stmt.listAccounts.all().map(toAccount);
    },
    async credit(accountId, amountMicros) {
      assertSafeInteger(amountMicros, 'amountMicros');
      return durable(addToBalance(accountId, amountMicros));
    },

    async createKey(accountId, keyHash, label) {
      const key: ApiKeyRecord = { id: newId('key'), accountId, label, createdAt: nowIso(), revokedAt: null };
      stmt.insertKey.run(key.id, key.accountId, keyHash, key.label, key.createdAt);
      return durable(key);
    },
    async findKeyByHash(keyHash) {
      const row = stmt.findKeyByHash.get(keyHash);
      return row && toFoundKey(row);
    },
    async getKey(keyId) {
      const row = stmt.getKey.get(keyId);
      return row && toKey(row);
    },
    async listKeys(accountId) {
      const rows = accountId === undefined ? stmt.listAllKeys.all() : stmt.listAccountKeys.all(accountId);
      return rows.map(toKey);
    },
    async revokeKey(keyId) {
      // Stamped under the write lock: every charge committed before it has an earlier created_at.
      return durable(revokeKeyTx.immediate(keyId));
    },
    async inactiveKeyIds(keyIds) {
      if (keyIds.length === 0) return [];
      return stmt.inactiveKeyIds.all(JSON.stringify(keyIds)).map((row) => row.id);
    },

    async recordUsage(records, options = {}) {
      for (const r of records) {
        assertSafeInteger(r.costMicros, 'costMicros');
        assertSafeInteger(r.unitPriceMicros, 'unitPriceMicros');
      }
      return durable(recordUsageTx.immediate(records, options));
    },
    async listUsage(filter = {}) {
      const where: string[] = [];
      const params: (string | number)[] = [];
      if (filter.accountId !== undefined) {
        where.push('account_id = ?');
        params.push(filter.accountId);
      }
      if (filter.requestId !== undefined) {
        where.push('request_id = ?');
        params.push(filter.requestId);
      }
      let sql = `SELECT * FROM usage_records${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
      // The last N by id (the account index carries the rowid), put back in ascending order.
      if (filter.latest !== undefined) {
        sql = `SELECT * FROM (${sql} ORDER BY id DESC LIMIT ?)`;
        params.push(filter.latest);
      }
      return db
        .prepare<(string | number)[], UsageRow>(`${sql} ORDER BY id`)
        .all(...params)
        .map(toUsage);
    },

    async placeHold(hold, now) {
      return holds.place(hold, now);
    },
    async growHold(holdId, extraMicros, now) {
      return holds.grow(holdId, extraMicros, now);
    },
    async renewHolds(holdIds, expiresAt) {
      holds.renew(holdIds, expiresAt);
    },
    async releaseHold(holdId) {
      holds.release(holdId);
    },
    async availableMicros(accountId, now) {
      return holds.available(accountId, now);
    },

    async getRateLimits(subject) {
      return rateLimits.get(subject);
    },
    async setRateLimits(subject, changes) {
      return durable(rateLimits.set(subject, changes));
    },
    async clearRateLimits(subject) {
      return durable(rateLimits.clear(subject));
    },

    async createClientSecret(secret, now) {
      await durable(clientSecrets.insert(secret, now));
    },
    async consumeClientSecret(secretHash) {
      return durable(clientSecrets.consume(secretHash));
    },
    async serverSecret(name, create) {
      return durable(telephony.serverSecret(name, create));
    },
    async getWebhook(accountId) {
      return telephony.getWebhook(accountId);
    },
    async setWebhook(accountId, webhook) {
      await durable(telephony.setWebhook(accountId, webhook));
    },
    async recordCall(call) {
      await durable(telephony.recordCall(call));
    },
    async listCalls(filter = {}) {
      return telephony.listCalls(filter);
    },
    ...sqliteAdmin(db, durable),

    async countAccounts() {
      return stmt.countAccounts.get()!.n;
    },
    async close() {
      wal?.close();
      if (db.open) db.close();
    },
  };
}
