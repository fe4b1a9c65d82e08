/**
 * `npm run keys -- webhook set|show|clear` and the call records in `npm run keys -- usage`: through
 * `runKeysCommand` on an in-memory store, and once as a real program on a database file.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runKeysCommand } from '../../../src/cli/keys.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { CallRecord, Store } from '../../../src/store/store.js';
import { signWebhook, verifyWebhookSignature } from '../../../src/telephony/webhooks/signature.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const SECRET = /whsec_[A-Za-z0-9_-]{43}/g;

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

const call = (id: string, accountId: string, extra: Partial<CallRecord> = {}): CallRecord => ({
  id,
  accountId,
  keyId: 'key_000000000001',
  carrier: 'twilio',
  mode: 'transcription',
  carrierCallId: 'CA123',
  startedAt: '2026-03-01T10:00:00.000Z',
  endedAt: '2026-03-01T10:01:05.000Z',
  durationMs: 65_000,
  turns: 4,
  callerSeconds: 21.25,
  charactersSynthesized: 180,
  charactersTranslated: 40,
  costMicros: 12_345,
  endReason: 'caller_hangup',
  ...extra,
});

describe('webhook', () => {
  it('set prints a signing secret once that the store holds; show gives the URL and never the secret', async () => {
    const account = await store.createAccount('a', 0);
    const set = await run('webhook', 'set', account.id, 'https://hooks.example.com/kuma?x=1');
    expect(set.code).toBe(0);
    const secrets = set.out.match(SECRET)!;
    expect(secrets).toHaveLength(1);
    expect(set.out).toMatch(/shown only this once/);
    const stored = await store.getWebhook(account.id);
    expect(stored).toMatchObject({ url: 'https://hooks.example.com/kuma?x=1', secret: secrets[0] });
    // The printed secret is the key integrators verify with.
    expect(verifyWebhookSignature(secrets[0]!, signWebhook(stored!.secret, '{}'), '{}')).toMatchObject({ valid: true });

    const shown = await run('webhook', 'show', account.id);
    expect(shown.out).toContain('https://hooks.example.com/kuma?x=1');
    expect(shown.out).not.toMatch(SECRET);
  });

  it('set again rotates the secret unless --keep-secret; clear removes the webhook', async () => {
    const account = await store.createAccount('a', 0);
    const first = (await run('webhook', 'set', account.id, 'https://a.example.com/')).out.match(SECRET)![0];
    const second = (await run('webhook', 'set', account.id, 'https://b.example.com/')).out.match(SECRET)![0];
    expect(second).not.toBe(first);
    const kept = await run('webhook', 'set', account.id, 'https://c.example.com/', '--keep-secret');
    expect(kept.out).not.toMatch(SECRET);
    expect(await store.getWebhook(account.id)).toMatchObject({ url: 'https://c.example.com/', secret: second });

    expect((await run('webhook', 'clear', account.id)).out).toMatch(/Cleared/);
    expect(await store.getWebhook(account.id)).toBeUndefined();
    expect((await run('webhook', 'show', account.id)).out).toMatch(/no webhook/);
    expect((await run('webhook', 'clear', account.id)).out).toMatch(/had no webhook/);
  });

  it('refuses URLs Kuma could not POST to, unknown accounts and actions, with exit code 1', async () => {
    const account = await store.createAccount('a', 0);
    const cases: Array<[string[], RegExp]> = [
      [['set', account.id, 'not a url'], /is not a URL/],
      [['set', account.id, 'ftp://example.com/x'], /must be https/],
      [['set', account.id, 'https://user:pw@example.com/'], /user name or password/],
      [['set', account.id, 'https://example.com/#frag'], /fragment/],
      [['set', account.id], /Usage: webhook set/],
      [['set', 'acct_000000000000', 'https://example.com/'], /No account/],
      [['show', 'acct_000000000000'], /No account/],
      [['set', account.id, 'https://example.com/', '--keep-secret'], /no secret to keep/],
      [['rotate', account.id], /Unknown webhook action "rotate"/],
    ];
    for (const [args, message] of cases) {
      expect(await run('webhook', ...args)).toMatchObject({ code: 1, err: expect.stringMatching(message) });
    }
    expect(await store.getWebhook(account.id)).toBeUndefined();
    const http = await run('webhook', 'set', account.id, 'http://10.0.0.5:8080/events');
    expect(http).toMatchObject({ code: 0, out: expect.stringMatching(/unencrypted/) });
  });
});

describe('usage lists call records', () => {
  it('shows each call of the account with duration, turns, usage, cost and end reason', async () => {
    const mine = await store.createAccount('mine', 0);
    const other = await store.createAccount('other', 0);
    await store.recordCall(call('call_a', mine.id));
    await store.recordCall(call('call_b', mine.id, { startedAt: '2026-03-01T11:00:00.000Z', carrier: 'vonage', mode: 'relay', endReason: 'app_ended' }));
    await store.recordCall(call('call_c', other.id));
    const r = await run('usage', mine.id);
    expect(r.code).toBe(0);
    expect(r.out).toContain('No usage recorded yet.');
    expect(r.out).toContain('call_a  ' + mine.id + '  twilio  transcription  65.0 s  4 turns  caller 21.3 s  chars 180/40  0.012345  caller_hangup');
    expect(r.out).toContain('call_b  ' + mine.id + '  vonage  relay');
    expect(r.out.indexOf('call_a')).toBeLessThan(r.out.indexOf('call_b'));
    expect(r.out).not.toContain('call_c');
    expect((await run('usage')).out).toContain('call_c');
  });

  it('runs as a program: webhook set/show and usage on the database named by KUMA_DB_PATH', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-cli-hooks-'));
    try {
      const dbPath = path.join(dir, 'cli.sqlite');
      const env = { ...process.env, KUMA_DB_PATH: dbPath };
      const exec = (...args: string[]) => promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/keys.ts', ...args], { cwd: repoRoot, env });
      const accountId = /acct_[0-9a-f]{12}/.exec((await exec('create', '--name', 'Phones')).stdout)![0];
      expect((await exec('webhook', 'set', accountId, 'https://hooks.example.com/e')).stdout).toMatch(SECRET);
      expect((await exec('webhook', 'show', accountId)).stdout).not.toMatch(SECRET);
      await expect(exec('webhook', 'set', accountId, 'gopher://x')).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/must be https/) });
      const fileStore = await openSqliteStore(dbPath);
      await fileStore.recordCall(call('call_spawned', accountId));
      await fileStore.close();
      expect((await exec('usage', accountId)).stdout).toContain('call_spawned');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
