/**
 * The Store contract (test/store-contract) against the PostgreSQL store, on a real PostgreSQL cluster that
 * this file starts from the machine's binaries (test/helpers/postgres.ts) and removes afterwards; a fresh
 * database per test. Without PostgreSQL binaries the file is skipped with a notice — unless
 * KUMA_REQUIRE_POSTGRES=1 (CI), where it fails.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../../src/store/postgres/postgres-store.js';
import { MIGRATIONS, migrate } from '../../../src/store/postgres/pg-migrations.js';
import { createPool } from '../../../src/store/postgres/pg-db.js';
import { describeStoreLocation, openStore } from '../../../src/store/open-store.js';
import type { Store } from '../../../src/store/store.js';
import { findPostgresBin, startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { describeStoreContract } from '../../store-contract/store-contract.js';

const bin = findPostgresBin();
const required = process.env.KUMA_REQUIRE_POSTGRES === '1';

if (!bin && !required) {
  console.warn('PostgreSQL binaries (initdb, pg_ctl) not found: skipping the PostgreSQL store tests (KUMA_REQUIRE_POSTGRES=1 makes this a failure)');
}

describe.skipIf(!bin && !required)('PostgreSQL store', () => {
  let cluster: TestPostgres;
  let databases = 0;
  const freshDatabase = () => cluster.createDatabase(`kuma_${process.pid}_${++databases}`);

  beforeAll(async () => {
    if (!bin) throw new Error('KUMA_REQUIRE_POSTGRES=1 but no PostgreSQL binaries (initdb, pg_ctl) were found');
    cluster = await startTestPostgres(bin);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  describeStoreContract('PostgreSQL', async () => {
    const url = await freshDatabase();
    const store = await openPostgresStore(url);
    const others: Store[] = [];
    return {
      store,
      async openAnother() {
        const other = await openPostgresStore(url);
        others.push(other);
        return other;
      },
      async backdateUsage(requestId, iso) {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query('UPDATE usage_records SET created_at = $1 WHERE request_id = $2', [iso, requestId]);
        await client.end();
      },
      async close() {
        for (const other of others) await other.close();
        await store.close();
      },
    };
  });

  describe('selection', () => {
    it('openStore opens PostgreSQL when a database URL is set (the SQLite path is then unused)', async () => {
      const url = await freshDatabase();
      const store = await openStore({ databaseUrl: url, dbPath: '/nonexistent/never-created/kuma.sqlite' });
      const account = await store.createAccount('via openStore', 3);
      await store.close();
      const direct = await openPostgresStore(url);
      expect(await direct.getAccount(account.id)).toEqual(account);
      await direct.close();
      expect(describeStoreLocation({ databaseUrl: 'postgres://kuma:secret@db:5432/kuma', dbPath: 'x' })).toBe('postgres://kuma:***@db:5432/kuma');
      expect(describeStoreLocation({ databaseUrl: url, dbPath: 'x' })).toBe(url);
    });

    it("fails to open, with the driver's error, when the database does not exist", async () => {
      await expect(openPostgresStore(cluster.url.replace('/kuma_test?', '/no_such_db?'))).rejects.toThrow(/no_such_db/);
    });
  });

  describe('migrations', () => {
    it('five processes opening a fresh database at once apply each migration exactly once', async () => {
      const url = await freshDatabase();
      const stores = await Promise.all(Array.from({ length: 5 }, () => openPostgresStore(url)));
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const { rows } = await client.query<{ version: number }>('SELECT version FROM kuma_migrations ORDER BY version');
      await client.end();
      expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      const account = await stores[0]!.createAccount('shared', 5);
      expect(await stores[4]!.getAccount(account.id)).toEqual(account);
      for (const s of stores) await s.close();
    });

    it('applies a later migration once on reopen, keeping the data, and refuses a newer schema', async () => {
      const url = await freshDatabase();
      const first = await openPostgresStore(url);
      const account = await first.createAccount('kept', 9);
      await first.close();
      const pool = createPool(url);
      try {
        const next = [...MIGRATIONS, { version: MIGRATIONS.length + 1, name: 'test', sql: 'CREATE TABLE later_table (x INTEGER)' }];
        await migrate(pool, next);
        await migrate(pool, next);
        expect((await pool.query('SELECT COUNT(*) AS n FROM kuma_migrations')).rows[0].n).toBe(next.length);
        expect((await pool.query('SELECT balance_micros FROM accounts WHERE id = $1', [account.id])).rows[0].balance_micros).toBe(9);
      } finally {
        await pool.end();
      }
      await expect(openPostgresStore(url)).rejects.toThrow(/newer/);
    });

    it('reading a BIGINT past 2^53 throws rather than rounding it', async () => {
      const url = await freshDatabase();
      const store = await openPostgresStore(url);
      const account = await store.createAccount('huge', Number.MAX_SAFE_INTEGER);
      await expect(store.credit(account.id, 1)).rejects.toThrow(/safe integer/);
      await store.close();
    });
  });
});
