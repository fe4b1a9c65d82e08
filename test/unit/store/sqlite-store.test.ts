/**
 * The SQLite store: schema and pragmas, accounts, keys, and above all the usage ledger's all-or-nothing
 * transaction and its durability across a kill -9.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { NewUsageRecord, Store, UsageUnit } from '../../../src/store/store.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const hangFixture = fileURLToPath(new URL('../../fixtures/commit-then-hang.ts', import.meta.url));

let dir: string;
let dbPath: string;
let store: Store;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-store-'));
  dbPath = path.join(dir, 'nested', 'deeper', 'kuma.sqlite');
  store = await openSqliteStore(dbPath);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function usage(accountId: string, overrides: Partial<NewUsageRecord> = {}): NewUsageRecord {
  return {
    requestId: 'req_1', accountId, keyId: 'key_aaaaaaaaaaaa', model: 'djelia-transcribe',
    unit: 'second', quantity: 1.5, unitPriceMicros: 100, costMicros: 150, ...overrides,
  };
}

describe('opening', () => {
  it('creates the parent directory, uses WAL and records the schema version', async () => {
    const raw = new Database(dbPath, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(raw.pragma('user_version', { simple: true })).toBe(6);
      const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
      expect(tables).toEqual(expect.arrayContaining(['accounts', 'api_keys', 'usage_records', 'holds', 'rate_limits', 'admin_keys', 'admin_audit']));
      const indexes = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'idx_%'").pluck().all();
      expect(indexes).toEqual(expect.arrayContaining(['idx_api_keys_key_hash', 'idx_usage_account', 'idx_usage_request']));
    } finally {
      raw.close();
    }
  });

  it('reopens an existing file without re-running migrations, keeping the data', async () => {
    const account = await store.createAccount('keep', 5);
    await store.close();
    store = await openSqliteStore(dbPath);
    expect(await store.getAccount(account.id)).toEqual(account);
  });

  it('upgrades a version-1 file (before holds) in place, keeping its accounts', async () => {
    const account = await store.createAccount('old', 700);
    await store.close();
    const raw = new Database(dbPath);
    raw.exec('DROP TABLE holds; DROP TABLE rate_limits; DROP TABLE client_secrets; DROP TABLE server_secrets; DROP TABLE account_webhooks; DROP TABLE calls; DROP TABLE admin_keys; DROP TABLE admin_audit; DROP INDEX idx_usage_account_time');
    raw.pragma('user_version = 1');
    raw.close();
    store = await openSqliteStore(dbPath);
    expect(await store.getAccount(account.id)).toEqual(account);
    expect((await store.placeHold({ id: 'hold_1', accountId: account.id, requestId: 'req_1', amountMicros: 700, expiresAt: Date.now() + 60_000 }, Date.now())).placed).toBe(true);
    expect(await store.availableMicros(account.id, Date.now())).toBe(0);
  });

  it('upgrades a version-2 file (before rate limits) in place, keeping its accounts and keys', async () => {
    const account = await store.createAccount('old', 700);
    const key = await store.createKey(account.id, 'b'.repeat(64), 'old');
    await store.close();
    const raw = new Database(dbPath);
    raw.exec('DROP TABLE rate_limits; DROP TABLE client_secrets; DROP TABLE server_secrets; DROP TABLE account_webhooks; DROP TABLE calls; DROP TABLE admin_keys; DROP TABLE admin_audit; DROP INDEX idx_usage_account_time');
    raw.pragma('user_version = 2');
    raw.close();
    store = await openSqliteStore(dbPath);
    expect((await store.findKeyByHash('b'.repeat(64)))?.key).toEqual(key);
    expect(await store.setRateLimits(account.id, { requestsPerMinute: 5 })).toEqual({ requestsPerMinute: 5, tokensPerMinute: null, concurrent: null });
    expect((await store.findKeyByHash('b'.repeat(64)))?.limits.account.requestsPerMinute).toBe(5);
  });

  it('upgrades a version-3 file (before client secrets) in place; a secret is consumed once, expired ones pruned at the next mint', async () => {
    const account = await store.createAccount('old', 700);
    const key = await store.createKey(account.id, 'c'.repeat(64), 'old');
    await store.close();
    const raw = new Database(dbPath);
    raw.exec('DROP TABLE client_secrets; DROP TABLE server_secrets; DROP TABLE account_webhooks; DROP TABLE calls; DROP TABLE admin_keys; DROP TABLE admin_audit; DROP INDEX idx_usage_account_time');
    raw.pragma('user_version = 3');
    raw.close();
    store = await openSqliteStore(dbPath);
    expect((await store.findKeyByHash('c'.repeat(64)))?.key).toEqual(key);
    const now = Date.now();
    const secret = { accountId: account.id, keyId: key.id, shape: 'ga' as const, session: { type: 'transcription' } };
    await store.createClientSecret({ ...secret, secretHash: 'old', expiresAt: now - 1 }, now - 10_000);
    await store.createClientSecret({ ...secret, secretHash: 'new', expiresAt: now + 60_000 }, now);
    expect(await store.consumeClientSecret('old')).toBeUndefined();
    expect(await store.consumeClientSecret('new')).toEqual({ ...secret, secretHash: 'new', expiresAt: now + 60_000 });
    expect(await store.consumeClientSecret('new')).toBeUndefined();
  });

  it('upgrades a version-4 file (before telephony) in place; the server secret is made once, webhooks and call records kept', async () => {
    const account = await store.createAccount('old', 700);
    const key = await store.createKey(account.id, 'd'.repeat(64), 'old');
    await store.close();
    const raw = new Database(dbPath);
    raw.exec('DROP TABLE server_secrets; DROP TABLE account_webhooks; DROP TABLE calls; DROP TABLE admin_keys; DROP TABLE admin_audit; DROP INDEX idx_usage_account_time');
    raw.pragma('user_version = 4');
    raw.close();
    store = await openSqliteStore(dbPath);
    expect((await store.findKeyByHash('d'.repeat(64)))?.key).toEqual(key);
    expect(await store.serverSecret('telephony-token', () => 'first')).toBe('first');
    expect(await store.serverSecret('telephony-token', () => 'second')).toBe('first');
    await store.setWebhook(account.id, { url: 'https://example.com/hooks', secret: 'whsec_x' });
    expect(await store.getWebhook(account.id)).toMatchObject({ accountId: account.id, url: 'https://example.com/hooks', secret: 'whsec_x' });
    await store.setWebhook(account.id, null);
    expect(await store.getWebhook(account.id)).toBeUndefined();
    const call = { id: 'call_1', accountId: account.id, keyId: key.id, carrier: 'twilio', mode: 'relay', carrierCallId: 'CA1', startedAt: '2026-01-01T00:00:00.000Z', endedAt: '2026-01-01T00:01:00.000Z', durationMs: 60_000, turns: 3, callerSeconds: 7.5, charactersSynthesized: 40, charactersTranslated: 0, costMicros: 1234, endReason: 'caller_hangup' };
    await store.recordCall(call);
    expect(await store.listCalls({ accountId: account.id })).toEqual([call]);
    expect(await store.listCalls({ accountId: 'acct_other' })).toEqual([]);
  });

  it('refuses a database written by a newer schema', async () => {
    await store.close();
    const raw = new Database(dbPath);
    raw.pragma('user_version = 99');
    raw.close();
    await expect(openSqliteStore(dbPath)).rejects.toThrow(/newer/);
    store = await openSqliteStore(':memory:');
  });

  it('works in memory', async () => {
    const mem = await openSqliteStore(':memory:');
    await mem.createAccount('m', 1);
    expect(await mem.countAccounts()).toBe(1);
    await mem.close();
  });
});

describe('accounts', () => {
  it('creates, lists, counts and credits accounts with ISO UTC timestamps', async () => {
    const a = await store.createAccount('alpha', 1_000_000);
    const b = await store.createAccount('beta', 0);
    expect(a.id).toMatch(/^acct_[0-9a-f]{12}$/);
    expect(a.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect((await store.listAccounts()).map((x) => x.id)).toEqual([a.id, b.id]);
    expect(await store.countAccounts()).toBe(2);
    expect((await store.credit(a.id, 250)).balanceMicros).toBe(1_000_250);
    expect((await store.credit(a.id, -2_000_000)).balanceMicros).toBe(-999_750);
    expect(await store.getAccount('acct_missing')).toBeUndefined();
  });

  it('rejects crediting an unknown account or a fractional amount', async () => {
    await expect(store.credit('acct_000000000000', 5)).rejects.toThrow(/Unknown account/);
    const a = await store.createAccount('a', 0);
    await expect(store.credit(a.id, 0.5)).rejects.toThrow(RangeError);
  });
});

describe('keys', () => {
  it('finds an active key by hash with its account, and stops finding it once revoked', async () => {
    const account = await store.createAccount('k', 10);
    const key = await store.createKey(account.id, 'a'.repeat(64), 'ci');
    expect(key).toMatchObject({ accountId: account.id, label: 'ci', revokedAt: null });
    expect(key.id).toMatch(/^key_[0-9a-f]{12}$/);
    const none = { requestsPerMinute: null, tokensPerMinute: null, concurrent: null };
    expect(await store.findKeyByHash('a'.repeat(64))).toEqual({ key, keyHash: 'a'.repeat(64), account, limits: { account: none, key: none } });
    expect(await store.revokeKey(key.id)).toBe(true);
    expect(await store.revokeKey(key.id)).toBe(false);
    expect(await store.revokeKey('key_unknown')).toBe(false);
    expect(await store.findKeyByHash('a'.repeat(64))).toBeUndefined();
    expect((await store.listKeys(account.id))[0]!.revokedAt).not.toBeNull();
  });

  it('lists keys per account and refuses a duplicate hash or an unknown account', async () => {
    const a = await store.createAccount('a', 0);
    const b = await store.createKey(a.id, 'b'.repeat(64), 'one');
    const other = await store.createAccount('other', 0);
    await store.createKey(other.id, 'c'.repeat(64), 'two');
    expect(await store.listKeys(a.id)).toEqual([b]);
    expect(await store.listKeys()).toHaveLength(2);
    await expect(store.createKey(a.id, 'b'.repeat(64), 'dup')).rejects.toThrow(/UNIQUE/);
    await expect(store.createKey('acct_nope', 'd'.repeat(64), 'x')).rejects.toThrow(/FOREIGN KEY/);
  });
});

describe('recordUsage', () => {
  it('writes exactly one row and debits exactly its cost', async () => {
    const a = await store.createAccount('u', 1_000);
    const { balances } = await store.recordUsage([usage(a.id)]);
    expect(balances).toEqual({ [a.id]: 850 });
    const rows = await store.listUsage();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ ...usage(a.id), id: expect.any(Number) });
    expect((await store.getAccount(a.id))!.balanceMicros).toBe(850);
  });

  it('writes nothing and debits nothing when one record violates the unit CHECK', async () => {
    const a = await store.createAccount('u', 1_000);
    const bad = usage(a.id, { unit: 'minute' as UsageUnit, costMicros: 300 });
    await expect(store.recordUsage([usage(a.id), bad])).rejects.toThrow(/CHECK constraint/);
    expect(await store.listUsage()).toEqual([]);
    expect((await store.getAccount(a.id))!.balanceMicros).toBe(1_000);
  });

  it('writes nothing when a later record names an unknown account', async () => {
    const a = await store.createAccount('u', 1_000);
    await expect(store.recordUsage([usage(a.id), usage('acct_nonexistent')])).rejects.toThrow();
    expect(await store.listUsage()).toEqual([]);
    expect((await store.getAccount(a.id))!.balanceMicros).toBe(1_000);
  });

  it('debits each account by the sum of its own records', async () => {
    const a = await store.createAccount('a', 1_000);
    const b = await store.createAccount('b', 1_000);
    const result = await store.recordUsage([usage(a.id), usage(b.id, { costMicros: 7 }), usage(a.id, { costMicros: 50 })]);
    expect(result.balances).toEqual({ [a.id]: 800, [b.id]: 993 });
  });

  it('refuses fractional micros', async () => {
    const a = await store.createAccount('a', 1_000);
    await expect(store.recordUsage([usage(a.id, { costMicros: 1.5 })])).rejects.toThrow(RangeError);
    expect(await store.listUsage()).toEqual([]);
  });

  it('filters usage by account and request', async () => {
    const a = await store.createAccount('a', 1_000);
    const b = await store.createAccount('b', 1_000);
    await store.recordUsage([usage(a.id, { requestId: 'r1' }), usage(b.id, { requestId: 'r2' })]);
    await store.recordUsage([usage(a.id, { requestId: 'r3' })]);
    expect((await store.listUsage({ accountId: a.id })).map((r) => r.requestId)).toEqual(['r1', 'r3']);
    expect((await store.listUsage({ requestId: 'r2' })).map((r) => r.accountId)).toEqual([b.id]);
    expect(await store.listUsage({ accountId: a.id, requestId: 'r2' })).toEqual([]);
  });

  it('keeps a committed row when the process is killed with SIGKILL right after the commit', async () => {
    const a = await store.createAccount('crash', 1_000);
    const child = spawn(process.execPath, ['--import', 'tsx', hangFixture, dbPath, a.id, 'req_crash'], {
      cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => { if (chunk.toString().includes('committed')) resolve(); });
      child.on('exit', () => reject(new Error(`child exited before committing: ${stderr}`)));
    });
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    await store.close();
    store = await openSqliteStore(dbPath);
    expect((await store.listUsage({ requestId: 'req_crash' })).map((r) => r.costMicros)).toEqual([200]);
    expect((await store.getAccount(a.id))!.balanceMicros).toBe(800);
  });
});

describe('rate-limit overrides', () => {
  it('sets fields one by one, keeps the others, goes back to defaults with null, and clears', async () => {
    const account = await store.createAccount('l', 1);
    const key = await store.createKey(account.id, 'c'.repeat(64), 'l');
    expect(await store.getRateLimits(account.id)).toEqual({ requestsPerMinute: null, tokensPerMinute: null, concurrent: null });
    await store.setRateLimits(account.id, { requestsPerMinute: 10 });
    expect(await store.setRateLimits(account.id, { concurrent: 0 })).toEqual({ requestsPerMinute: 10, tokensPerMinute: null, concurrent: 0 });
    await store.setRateLimits(key.id, { tokensPerMinute: 7 });
    expect((await store.findKeyByHash('c'.repeat(64)))?.limits).toEqual({
      account: { requestsPerMinute: 10, tokensPerMinute: null, concurrent: 0 },
      key: { requestsPerMinute: null, tokensPerMinute: 7, concurrent: null },
    });
    expect(await store.setRateLimits(account.id, { requestsPerMinute: null })).toEqual({ requestsPerMinute: null, tokensPerMinute: null, concurrent: 0 });
    await expect(store.setRateLimits(account.id, { concurrent: -1 })).rejects.toThrow(RangeError);
    expect(await store.clearRateLimits(account.id)).toBe(true);
    expect(await store.clearRateLimits(account.id)).toBe(false);
    expect(await store.getRateLimits(account.id)).toEqual({ requestsPerMinute: null, tokensPerMinute: null, concurrent: null });
  });
});
