/**
 * The networked Store: everything several Kuma nodes share — accounts, keys, the usage ledger and holds,
 * rate-limit overrides, client secrets, server secrets, webhooks, call records, the admin API's keys and
 * audit — in one PostgreSQL database, through a pool of `pg` connections. Selected by KUMA_DATABASE_URL;
 * SQLite stays the embedded default. Each concern lives in its own pg-* module, as in the SQLite store.
 */
import type { Store } from '../store.js';
import { pgAccounts } from './pg-accounts.js';
import { pgAdmin } from './pg-admin.js';
import { createPool } from './pg-db.js';
import { pgLedger } from './pg-ledger.js';
import { migrate } from './pg-migrations.js';
import { pgTelephony } from './pg-telephony.js';
import { reportingOutages } from './pg-outage.js';

/**
 * Connects to `url` (postgres:// or postgresql://), applies pending migrations, and returns the Store.
 * Fails (and closes the pool) when the database cannot be reached or its schema is newer than this build.
 * Afterwards a method that finds the database unreachable fails with StoreUnavailableError (pg-outage.ts).
 */
export async function openPostgresStore(url: string): Promise<Store> {
  const pool = createPool(url);
  try {
    await migrate(pool);
    // Holds of a process that died are gone once expired; clearing them at open keeps the table small.
    await pool.query('DELETE FROM holds WHERE expires_at <= $1', [Date.now()]);
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
  let closed = false;
  return reportingOutages({
    ...pgAccounts(pool),
    ...pgLedger(pool),
    ...pgTelephony(pool),
    ...pgAdmin(pool),
    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
    },
  });
}
