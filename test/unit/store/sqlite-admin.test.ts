/**
 * The admin API's part of the SQLite store: admin keys by hash (found only while active, counted revoked
 * included), the audit trail (newest first, bounded), the per-day usage sums (UTC days, distinct requests,
 * units apart, other accounts and older days left out), and the upgrade of a version-5 file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { NewUsageRecord, Store } from '../../../src/store/store.js';

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

describe('admin keys', () => {
  it('are found by hash while active; revoked ones are not found, still listed and counted', async () => {
    expect(await store.countAdminKeys()).toBe(0);
    const a = await store.createAdminKey('a'.repeat(64), 'ops');
    const b = await store.createAdminKey('b'.repeat(64), 'console');
    expect(a).toMatchObject({ label: 'ops', revokedAt: null });
    expect(a.id).toMatch(/^adm_[0-9a-f]{12}$/);
    expect(await store.findAdminKeyByHash('a'.repeat(64))).toEqual({ key: a, keyHash: 'a'.repeat(64) });
    expect(await store.revokeAdminKey(a.id)).toBe(true);
    expect(await store.revokeAdminKey(a.id)).toBe(false);
    expect(await store.revokeAdminKey('adm_unknown')).toBe(false);
    expect(await store.findAdminKeyByHash('a'.repeat(64))).toBeUndefined();
    expect(await store.findAdminKeyByHash('b'.repeat(64))).toEqual({ key: b, keyHash: 'b'.repeat(64) });
    const listed = await store.listAdminKeys();
    expect(listed.map((k) => k.id)).toEqual([a.id, b.id]);
    expect(listed[0]!.revokedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await store.countAdminKeys()).toBe(2);
  });

  it('refuses a second key with the same hash', async () => {
    await store.createAdminKey('c'.repeat(64), 'one');
    await expect(store.createAdminKey('c'.repeat(64), 'two')).rejects.toThrow(/UNIQUE/);
  });
});

describe('the audit trail', () => {
  it('keeps entries with their detail, lists the latest first, at most `limit`', async () => {
    const entries = [];
    for (let i = 0; i < 5; i++) {
      entries.push(await store.recordAdminAudit({ adminKeyId: 'adm_1', action: 'account.credit', target: `acct_${i}`, detail: { amount_micros: i, nested: { ok: true } }, requestId: `req_${i}` }));
    }
    expect(entries[0]!.id).toMatch(/^aud_[0-9a-f]{16}$/);
    const latest = await store.listAdminAudit(3);
    expect(latest.map((e) => e.target)).toEqual(['acct_4', 'acct_3', 'acct_2']);
    expect(latest[0]).toEqual(entries[4]);
    expect(latest[0]!.detail).toEqual({ amount_micros: 4, nested: { ok: true } });
    expect(await store.listAdminAudit(1000)).toHaveLength(5);
  });
});

describe('daily usage', () => {
  const record = (accountId: string, overrides: Partial<NewUsageRecord>): NewUsageRecord => ({
    requestId: 'req_1', accountId, keyId: 'key_1', model: 'sunjata-1', unit: 'second', quantity: 1, unitPriceMicros: 100, costMicros: 100, ...overrides,
  });

  /** Moves the rows of a request to another instant: recordUsage always stamps the present. */
  function backdate(requestId: string, iso: string): void {
    const raw = new Database(dbPath);
    raw.prepare('UPDATE usage_records SET created_at = ? WHERE request_id = ?').run(iso, requestId);
    raw.close();
  }

  it('sums each UTC day: distinct requests, cost, and seconds, characters and tokens apart; since the given day only', async () => {
    const account = await store.createAccount('a', 10_000_000);
    const other = await store.createAccount('b', 10_000_000);
    await store.recordUsage([
      record(account.id, { requestId: 'r1', unit: 'second', quantity: 1.5, costMicros: 150 }),
      record(account.id, { requestId: 'r1', unit: 'character', quantity: 40, unitPriceMicros: 20, costMicros: 800 }),
    ]);
    await store.recordUsage([record(account.id, { requestId: 'r2', unit: 'token', quantity: 12, unitPriceMicros: 60, costMicros: 720 })]);
    await store.recordUsage([record(account.id, { requestId: 'r3', unit: 'second', quantity: 2, costMicros: 200 })]);
    await store.recordUsage([record(account.id, { requestId: 'r4', unit: 'character', quantity: 5, costMicros: 75 })]);
    await store.recordUsage([record(account.id, { requestId: 'r5', unit: 'second', quantity: 9, costMicros: 900 })]);
    await store.recordUsage([record(other.id, { requestId: 'r6', unit: 'second', quantity: 4, costMicros: 400 })]);
    backdate('r1', '2026-03-01T23:59:59.999Z');
    backdate('r2', '2026-03-01T00:00:00.000Z');
    backdate('r3', '2026-03-03T10:00:00.000Z');
    backdate('r4', '2026-03-03T11:00:00.000Z');
    backdate('r5', '2026-02-28T23:59:59.999Z'); // the day before the window
    backdate('r6', '2026-03-01T12:00:00.000Z'); // another account

    expect(await store.dailyUsage(account.id, '2026-03-01')).toEqual([
      { date: '2026-03-01', requests: 2, costMicros: 1670, seconds: 1.5, characters: 40, tokens: 12 },
      { date: '2026-03-03', requests: 2, costMicros: 275, seconds: 2, characters: 5, tokens: 0 },
    ]);
    expect(await store.dailyUsage(account.id, '2026-03-02')).toEqual([{ date: '2026-03-03', requests: 2, costMicros: 275, seconds: 2, characters: 5, tokens: 0 }]);
    expect(await store.dailyUsage(account.id, '2026-03-04')).toEqual([]);
    expect(await store.dailyUsage('acct_none', '2026-01-01')).toEqual([]);
  });
});

describe('upgrading', () => {
  it('a version-5 file (before the admin API) gains the admin tables, keeping its accounts and usage', async () => {
    const account = await store.createAccount('old', 700);
    await store.recordUsage([{ requestId: 'r', accountId: account.id, keyId: 'k', model: 'm', unit: 'second', quantity: 1, unitPriceMicros: 100, costMicros: 100 }]);
    await store.close();
    const raw = new Database(dbPath);
    raw.exec('DROP TABLE admin_keys; DROP TABLE admin_audit; DROP INDEX idx_usage_account_time');
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
