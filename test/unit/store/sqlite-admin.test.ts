/**
 * The admin API's part of the SQLite store that only SQLite has: the upgrade of a version-5 file. Admin
 * keys, the audit trail and the per-day usage sums are in the Store contract (sqlite-contract.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';

let dir: string;
let dbPath: string;
let store: Store;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-admin-store-'));
  dbPath = path.join(dir, 'kuma.sqlite');
  store = await openSqliteStore(dbPath);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('upgrading', () => {
  it('a version-5 file (before the admin API) gains the admin tables, keeping its accounts and usage', async () => {
    const account = await store.createAccount('old', 700);
    await store.recordUsage([
      { requestId: 'r', accountId: account.id, keyId: 'k', model: 'm', unit: 'second', quantity: 1, unitPriceMicros: 100, costMicros: 100 },
    ]);
    await store.close();
    const raw = new Database(dbPath);
    raw.exec(
      'DROP INDEX idx_usage_settlement; ALTER TABLE usage_records DROP COLUMN line; ALTER TABLE usage_records DROP COLUMN settlement_id; DROP TABLE admin_keys; DROP TABLE admin_audit; DROP INDEX idx_usage_account_time',
    );
    raw.pragma('user_version = 5');
    raw.close();
    store = await openSqliteStore(dbPath);
    expect(await store.getAccount(account.id)).toMatchObject({ balanceMicros: 600 });
    expect(await store.countAdminKeys()).toBe(0);
    await store.createAdminKey('e'.repeat(64), 'after upgrade');
    expect(await store.countAdminKeys()).toBe(1);
    expect((await store.dailyUsage(account.id, '2000-01-01'))[0]).toMatchObject({ requests: 1, costMicros: 100 });
  });
});
