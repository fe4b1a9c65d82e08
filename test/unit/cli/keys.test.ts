/**
 * The keys CLI: create / list / credit / revoke / usage round trips through `runKeysCommand` on an
 * in-memory store, its input errors, that it never prints a key twice or a hash ever, and one real run.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authenticateApiKey, hashApiKey } from '../../../src/auth/api-keys.js';
import { runKeysCommand } from '../../../src/cli/keys.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

let store: Store;

beforeEach(async () => {
  store = await openSqliteStore(':memory:');
});

afterEach(async () => {
  await store.close();
});

async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runKeysCommand(
    argv,
    store,
    (l) => out.push(l),
    (l) => err.push(l),
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function create(...extra: string[]) {
  const result = await run('create', ...extra);
  expect(result.code).toBe(0);
  return {
    ...result,
    apiKey: UUID.exec(result.out)![0],
    accountId: /acct_[0-9a-f]{12}/.exec(result.out)![0],
    keyId: /key_[0-9a-f]{12}/.exec(result.out)![0],
  };
}

describe('create', () => {
  it('creates an account with its balance and a working key, shown once with a warning', async () => {
    const { out, apiKey, accountId, keyId } = await create('--name', 'Studio', '--balance', '12.5', '--label', 'ci');
    expect(out).toMatch(/shown only this once and cannot be shown again/);
    expect(out.match(new RegExp(apiKey, 'g'))).toHaveLength(1);
    expect(await store.getAccount(accountId)).toMatchObject({ name: 'Studio', balanceMicros: 12_500_000 });
    const auth = await authenticateApiKey(store, apiKey);
    expect(auth.key).toMatchObject({ id: keyId, label: 'ci', accountId });
  });

  it('adds a key to an existing account', async () => {
    const first = await create('--balance', '1');
    const second = await create('--account', first.accountId, '--label', 'second');
    expect(second.accountId).toBe(first.accountId);
    expect(second.apiKey).not.toBe(first.apiKey);
    expect(await store.countAccounts()).toBe(1);
    expect(await store.listKeys(first.accountId)).toHaveLength(2);
  });

  it('refuses bad input with exit code 1 and a clear message', async () => {
    expect(await run('create', '--account', 'acct_000000000000')).toMatchObject({ code: 1, err: expect.stringMatching(/No account with id/) });
    const { accountId } = await create();
    expect(await run('create', '--account', accountId, '--balance', '5')).toMatchObject({ code: 1, err: expect.stringMatching(/cannot be combined/) });
    expect(await run('create', '--balance', 'lots')).toMatchObject({ code: 1, err: expect.stringMatching(/Invalid amount/) });
    expect(await run('create', '--balance', '-1')).toMatchObject({ code: 1, err: expect.stringMatching(/negative/) });
    expect(await run('create', '--colour', 'red')).toMatchObject({ code: 1, err: expect.stringMatching(/Unknown option '--colour'/) });
    expect(await run('create', 'extra')).toMatchObject({ code: 1, err: expect.stringMatching(/Unexpected argument "extra"/) });
  });
});

describe('list / credit / revoke round trip', () => {
  it('lists balances and keys, credits both ways, revokes, and never prints a key or a hash', async () => {
    const { apiKey, accountId, keyId } = await create('--name', 'Round', '--balance', '3', '--label', 'laptop');

    let list = await run('list');
    expect(list.code).toBe(0);
    expect(list.out).toContain(accountId);
    expect(list.out).toContain('balance 3.00');
    expect(list.out).toMatch(new RegExp(`${keyId}\\s+label "laptop".*active`));

    expect(await run('credit', accountId, '2.5')).toMatchObject({ code: 0, out: expect.stringMatching(/balance is now 5\.50/) });
    expect(await run('credit', accountId, '-0.25')).toMatchObject({ code: 0, out: expect.stringMatching(/balance is now 5\.25/) });
    expect((await store.getAccount(accountId))!.balanceMicros).toBe(5_250_000);

    expect(await run('revoke', keyId)).toMatchObject({ code: 0 });
    await expect(authenticateApiKey(store, apiKey)).rejects.toMatchObject({ code: 'invalid_api_key' });
    expect(await run('revoke', keyId)).toMatchObject({ code: 1, err: expect.stringMatching(/No active key/) });

    list = await run('list');
    expect(list.out).toContain('balance 5.25');
    expect(list.out).toMatch(new RegExp(`${keyId}.*revoked \\d{4}-`));
    for (const secret of [apiKey, apiKey.toUpperCase(), hashApiKey(apiKey)]) expect(list.out).not.toContain(secret);
    expect(list.out).not.toMatch(UUID);
    expect(list.out).not.toMatch(/[0-9a-f]{64}/);
  });

  it('refuses bad credit input', async () => {
    const { accountId } = await create();
    expect(await run('credit', accountId)).toMatchObject({ code: 1, err: expect.stringMatching(/Missing UNITS/) });
    expect(await run('credit', accountId, 'ten')).toMatchObject({ code: 1, err: expect.stringMatching(/Invalid amount/) });
    expect(await run('credit', 'acct_000000000000', '1')).toMatchObject({ code: 1, err: expect.stringMatching(/No account/) });
  });

  it('says so when there is nothing to list', async () => {
    expect(await run('list')).toMatchObject({ code: 0, out: expect.stringMatching(/No accounts yet/) });
  });
});

describe('usage', () => {
  it('shows the last 50 usage rows, optionally for one account', async () => {
    const { accountId, keyId } = await create('--balance', '10');
    const other = await create('--balance', '10');
    const record = (i: number, acct = accountId) => ({
      requestId: `req_${i}`,
      accountId: acct,
      keyId,
      model: 'djelia-transcribe',
      unit: 'second' as const,
      quantity: 1,
      unitPriceMicros: 100,
      costMicros: 100,
    });
    await store.recordUsage(Array.from({ length: 60 }, (_, i) => record(i)));
    await store.recordUsage([record(99, other.accountId)]);

    const all = await run('usage');
    expect(all.out.split('\n')).toHaveLength(50);
    expect(all.out).toContain('req_99');
    const mine = await run('usage', accountId);
    expect(mine.out.split('\n')).toHaveLength(50);
    expect(mine.out).toContain('req_59');
    expect(mine.out).not.toMatch(/req_9\b/);
    expect(mine.out).not.toContain('req_99');
    expect(await run('usage', 'acct_000000000000')).toMatchObject({ code: 1 });
  });
});

describe('commands', () => {
  it('prints help with exit 0, and help with exit 1 for a missing or unknown command', async () => {
    expect(await run('help')).toMatchObject({ code: 0, out: expect.stringMatching(/Usage: npm run keys/) });
    expect(await run()).toMatchObject({ code: 1, err: expect.stringMatching(/Missing command/) });
    expect(await run('destroy')).toMatchObject({ code: 1, err: expect.stringMatching(/Unknown command "destroy"/) });
  });

  it('runs as a program on the database named by KUMA_DB_PATH', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-cli-'));
    try {
      const env = { ...process.env, KUMA_DB_PATH: path.join(dir, 'cli.sqlite') };
      const exec = (...args: string[]) => promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/keys.ts', ...args], { cwd: repoRoot, env });
      const created = await exec('create', '--name', 'Spawned', '--balance', '1');
      const accountId = /acct_[0-9a-f]{12}/.exec(created.stdout)![0];
      expect((await exec('credit', accountId, '-0.5')).stdout).toMatch(/balance is now 0\.50/);
      expect((await exec('list')).stdout).toContain('"Spawned"  balance 0.50');
      await expect(exec('revoke', 'key_000000000000')).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/No active key/) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('limits', () => {
  it("set, show and clear an account's and a key's overrides", async () => {
    const { accountId, keyId } = await create('--name', 'lim');
    let r = await run('limits', 'set', accountId, '--requests-per-minute', '5', '--concurrent', '0');
    expect(r.code).toBe(0);
    expect(r.out).toContain(`Limits of account ${accountId}: requests 5 /min (set), tokens unlimited (default), concurrent unlimited (set)`);
    expect(await store.getRateLimits(accountId)).toEqual({ requestsPerMinute: 5, tokensPerMinute: null, concurrent: 0 });
    r = await run('limits', 'set', keyId, '--tokens-per-minute', '100');
    expect(r.out).toContain(`Limits of key ${keyId}`);
    expect(await store.getRateLimits(keyId)).toEqual({ requestsPerMinute: null, tokensPerMinute: 100, concurrent: null });

    const defaults = {
      account: { requestsPerMinute: 600, tokensPerMinute: 60000, concurrent: 16 },
      key: { requestsPerMinute: 0, tokensPerMinute: 0, concurrent: 0 },
    };
    const out: string[] = [];
    expect(
      await runKeysCommand(
        ['limits', 'show', accountId],
        store,
        (l) => out.push(l),
        (l) => out.push(l),
        { limitDefaults: defaults },
      ),
    ).toBe(0);
    expect(out[0]).toContain('requests 5 /min (set), tokens 60000 /min (default), concurrent unlimited (set)');
    expect(out[1]).toContain(`${keyId}  requests unlimited (default), tokens 100 /min (set)`);

    r = await run('limits', 'set', accountId, '--requests-per-minute', 'default');
    expect(await store.getRateLimits(accountId)).toEqual({ requestsPerMinute: null, tokensPerMinute: null, concurrent: 0 });
    r = await run('limits', 'clear', accountId);
    expect(r.out).toContain('Cleared');
    expect(await store.getRateLimits(accountId)).toEqual({ requestsPerMinute: null, tokensPerMinute: null, concurrent: null });
  });

  it('refuses bad input with a clear message and exit code 1', async () => {
    const { accountId } = await create('--name', 'lim');
    for (const [argv, message] of [
      [['limits', 'set', accountId], /at least one of/],
      [['limits', 'set', accountId, '--concurrent', '-1'], /--concurrent|argument/],
      [['limits', 'set', accountId, '--requests-per-minute', '1.5'], /whole number/],
      [['limits', 'set', 'acct_000000000000', '--concurrent', '1'], /No account or key/],
      [['limits', 'show', 'key_000000000000'], /No account/],
      [['limits', 'frob', accountId], /Unknown limits action/],
      [['limits', 'set', accountId, '--bogus', '1'], /Unknown option/],
    ] as const) {
      const r = await run(...argv);
      expect(r.code, argv.join(' ')).toBe(1);
      expect(r.err, argv.join(' ')).toMatch(message);
    }
  });
});
