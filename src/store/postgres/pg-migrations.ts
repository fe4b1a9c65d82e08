/**
 * The PostgreSQL schema as versioned migrations. `kuma_migrations` lists the versions applied; each pending
 * migration runs once, in its own transaction, under a transaction-scoped advisory lock, so that two
 * processes starting together against a fresh database serialize: the second waits, re-reads the table
 * and finds nothing left to do. Append only: a deployed database replays just the versions it lacks.
 *
 * Money is BIGINT micros; instants are ISO 8601 UTC text, exactly as the SQLite store keeps them, so both
 * stores answer identically (the usage report's UTC day is the text's first 10 characters). Tables whose
 * listing order is insertion order carry an identity `seq`.
 */
import type pg from 'pg';

/** pg_advisory_xact_lock key: "kuma" in ASCII, any constant shared by every Kuma process will do. */
const MIGRATION_LOCK = 0x6b756d61;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'accounts, keys, usage ledger, holds, rate limits, client secrets, telephony, admin',
    sql: `
  CREATE TABLE accounts (
    id             TEXT PRIMARY KEY,
    seq            BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    name           TEXT NOT NULL,
    balance_micros BIGINT NOT NULL,
    created_at     TEXT NOT NULL
  );
  CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    seq        BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    key_hash   TEXT NOT NULL UNIQUE,
    label      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  CREATE INDEX idx_api_keys_account ON api_keys(account_id);
  -- settlement_id + line: the idempotency key of a usage write (see pg-ledger.ts). NULLs are distinct, so
  -- rows written without a settlement id are never deduplicated.
  CREATE TABLE usage_records (
    id                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request_id        TEXT NOT NULL,
    account_id        TEXT NOT NULL REFERENCES accounts(id),
    key_id            TEXT NOT NULL,
    model             TEXT NOT NULL,
    unit              TEXT NOT NULL CHECK (unit IN ('second', 'character', 'token')),
    quantity          DOUBLE PRECISION NOT NULL CHECK (quantity >= 0),
    unit_price_micros BIGINT NOT NULL,
    cost_micros       BIGINT NOT NULL,
    created_at        TEXT NOT NULL,
    settlement_id     TEXT,
    line              INTEGER,
    UNIQUE (settlement_id, line)
  );
  CREATE INDEX idx_usage_account_time ON usage_records(account_id, created_at);
  CREATE INDEX idx_usage_request ON usage_records(request_id);
  CREATE TABLE holds (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts(id),
    request_id    TEXT NOT NULL,
    amount_micros BIGINT NOT NULL CHECK (amount_micros >= 0),
    expires_at    BIGINT NOT NULL
  );
  CREATE INDEX idx_holds_account ON holds(account_id, expires_at);
  CREATE TABLE rate_limits (
    subject             TEXT PRIMARY KEY,
    requests_per_minute BIGINT CHECK (requests_per_minute >= 0),
    tokens_per_minute   BIGINT CHECK (tokens_per_minute >= 0),
    concurrent          BIGINT CHECK (concurrent >= 0)
  );
  CREATE TABLE client_secrets (
    secret_hash  TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts(id),
    key_id       TEXT NOT NULL,
    shape        TEXT NOT NULL,
    session_json TEXT NOT NULL,
    expires_at   BIGINT NOT NULL,
    created_at   TEXT NOT NULL
  );
  CREATE INDEX idx_client_secrets_expiry ON client_secrets(expires_at);
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
    id                     TEXT PRIMARY KEY,
    account_id             TEXT NOT NULL REFERENCES accounts(id),
    key_id                 TEXT NOT NULL,
    carrier                TEXT NOT NULL,
    mode                   TEXT NOT NULL,
    carrier_call_id        TEXT,
    started_at             TEXT NOT NULL,
    ended_at               TEXT NOT NULL,
    duration_ms            BIGINT NOT NULL,
    turns                  INTEGER NOT NULL,
    caller_seconds         DOUBLE PRECISION NOT NULL,
    characters_synthesized BIGINT NOT NULL,
    characters_translated  BIGINT NOT NULL,
    cost_micros            BIGINT NOT NULL,
    end_reason             TEXT NOT NULL
  );
  CREATE INDEX idx_calls_account ON calls(account_id, started_at);
  CREATE TABLE admin_keys (
    id         TEXT PRIMARY KEY,
    seq        BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    key_hash   TEXT NOT NULL UNIQUE,
    label      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  CREATE TABLE admin_audit (
    id           TEXT PRIMARY KEY,
    seq          BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    at           TEXT NOT NULL,
    admin_key_id TEXT NOT NULL,
    action       TEXT NOT NULL,
    target       TEXT NOT NULL,
    detail       TEXT NOT NULL,
    request_id   TEXT NOT NULL
  );
  `,
  },
];

/** Applies every pending migration, each once, in its own transaction; refuses a database from a newer build. */
export async function migrate(pool: pg.Pool, migrations: readonly Migration[] = MIGRATIONS): Promise<void> {
  const latest = migrations.at(-1)?.version ?? 0;
  for (const migration of migrations) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      // Held until COMMIT/ROLLBACK: a second process starting now waits here, then sees our row.
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      await client.query(
        `CREATE TABLE IF NOT EXISTS kuma_migrations (
           version    INTEGER PRIMARY KEY,
           name       TEXT NOT NULL,
           applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )`,
      );
      const { rows } = await client.query<{ max: number | null }>('SELECT MAX(version) AS max FROM kuma_migrations');
      const current = rows[0]?.max ?? 0;
      if (current > latest) throw new Error(`Database schema version ${current} is newer than this build supports (${latest})`);
      if (current < migration.version) {
        await client.query(migration.sql);
        await client.query('INSERT INTO kuma_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
}
