/**
 * What only the SQLite store has: its file (parent directory, WAL, schema version), upgrades of files
 * written by older versions, and a committed usage row's durability across a kill -9. Everything a Store
 * must do runs against SQLite and PostgreSQL in sqlite-contract.test.ts and postgres-contract.test.ts.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { NewUsageRecord, Store } from '../../../src/store/store.js';

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

/** Undoes migration 7 (idempotent settlements), so that a test can replay the migrations from an older version. */
const UNDO_SETTLEMENTS = 'DROP INDEX idx_usage_settlement; ALTER TABLE usage_records DROP COLUMN line; ALTER TABLE usage_records DROP COLUMN settlement_id; ';

function usage(accountId: string, overrides: Partial<NewUsageRecord> = {}): NewUsageRecord {
  return {
    requestId: 'req_1',
    accountId,
    keyId: 'key_aaaaaaaaaaaa',
    model: 'djelia-transcribe',
    unit: 'second',
    quantity: 1.5,
    unitPriceMicros: 100,
    costMicros: 150,
    ...overrides,
  };
}

describe('opening', () => {
  it('creates the parent directory, uses WAL and records the schema version', async () => {
    const raw = new Database(dbPath, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(raw.pragma('user_version', { simple: true })).toBe(7);
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
    raw.exec(
      UNDO_SETTLEMENTS +
        'DROP TABLE holds; DROP TABLE rate_limits; DROP TABLE client_secrets; DROP TABLE server_secrets; DROP TABLE account_webhooks; DROP TABLE calls; DROP TABLE admin_keys; DROP TABLE admin_audit; DROP INDEX idx_usage_account_time',
    );
    raw.pragma('user_version = 1');
    raw.close();
    store = await openSqliteStore(dbPath);
    expect(await store.getAccount(account.id)).toEqual(account);
    expect(
      (await store.placeHold({ id: 'hold_1', accountId: account.id, requestId: 'req_1', amountMicros: 700, expiresAt: Date.now() + 60_000 }, Date.now()))
        .placed,
    ).toBe(true);
    expect(await store.availableMicros(account.id, Date.now())).toBe(0);
  });

  it('upgrades a version-2 file (before rate limits) in place, keeping its accounts and keys', async () => {
    const account = await store.createAccount('old', 700);
    const key = await store.createKey(account.id, 'b'.repeat(64), 'old');
    await store.close();
    const raw = new Database(dbPath);
    raw.exec(
      UNDO_SETTLEMENTS +
        'DROP TABLE rate_limits; DROP TABLE client_secrets; DROP TABLE server_secrets; DROP TABLE account_webhooks; DROP TABLE calls; DROP TABLE admin_keys; DROP TABLE admin_audit; DROP INDEX idx_usage_account_time',
    );
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
    raw.exec(
      UNDO_SETTLEMENTS +
        'DROP TABLE client_secrets; DROP TABLE server_secrets; DROP TABLE account_webhooks; DROP TABLE calls; DROP TABLE admin_keys; DROP TABLE admin_audit; DROP INDEX idx_usage_account_time',
    );
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
    raw.exec(
      UNDO_SETTLEMENTS +
        'DROP TABLE server_secrets; DROP TABLE account_webhooks; DROP TABLE calls; DROP TABLE admin_keys; DROP TABLE admin_audit; DROP INDEX idx_usage_account_time',
    );
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
    const call = {
      id: 'call_1',
      accountId: account.id,
      keyId: key.id,
      carrier: 'twilio',
      mode: 'relay',
      carrierCallId: 'CA1',
      startedAt: '2026-01-01T00:00:00.000Z',
      endedAt: '2026-01-01T00:01:00.000Z',
      durationMs: 60_000,
      turns: 3,
      callerSeconds: 7.5,
      charactersSynthesized: 40,
      charactersTranslated: 0,
      costMicros: 1234,
      endReason: 'caller_hangup',
    };
    await store.recordCall(call);
    expect(await store.listCalls({ accountId: account.id })).toEqual([call]);
    expect(await store.listCalls({ accountId: 'acct_other' })).toEqual([]);
  });

  it('upgrades a version-6 file (before idempotent settlements) in place: old rows kept, a retried settlement debits once', async () => {
    const account = await store.createAccount('old', 1_000);
    await store.recordUsage([usage(account.id)]);
    await store.close();
    const raw = new Database(dbPath);
    raw.exec(UNDO_SETTLEMENTS);
    raw.pragma('user_version = 6');
    raw.close();
    store = await openSqliteStore(dbPath);
    expect(await store.listUsage()).toHaveLength(1);
    await store.placeHold({ id: 'hold_1', accountId: account.id, requestId: 'req_2', amountMicros: 150, expiresAt: Date.now() + 60_000 }, Date.now());
    await store.recordUsage([usage(account.id, { requestId: 'req_2' })], { releaseHoldId: 'hold_1' });
    await store.recordUsage([usage(account.id, { requestId: 'req_2' })], { releaseHoldId: 'hold_1' });
    expect(await store.listUsage()).toHaveLength(2);
    expect((await store.getAccount(account.id))!.balanceMicros).toBe(700);
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

describe('recordUsage durability', () => {
  it('keeps a committed row when the process is killed with SIGKILL right after the commit', async () => {
    const a = await store.createAccount('crash', 1_000);
    const child = spawn(process.execPath, ['--import', 'tsx', hangFixture, dbPath, a.id, 'req_crash'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('committed')) resolve();
      });
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
