/**
 * The Store contract (test/store-contract) against the embedded SQLite store, on a temp file per test (a
 * second store instance on the same file stands for a second process).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';
import { describeStoreContract } from '../../store-contract/store-contract.js';

describeStoreContract('SQLite', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-contract-'));
  const dbPath = path.join(dir, 'kuma.sqlite');
  const store = await openSqliteStore(dbPath);
  const others: Store[] = [];
  return {
    store,
    async openAnother() {
      const other = await openSqliteStore(dbPath);
      others.push(other);
      return other;
    },
    async backdateUsage(requestId, iso) {
      const raw = new Database(dbPath);
      raw.prepare('UPDATE usage_records SET created_at = ? WHERE request_id = ?').run(iso, requestId);
      raw.close();
    },
    async close() {
      for (const other of others) await other.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
