/**
 * The in-memory key cache, through the HTTP API: what this process changes (revocation, limits) applies
 * at once; what another process changes (the keys CLI, another connection to the database file) applies
 * within the cache's TTL; balances are never served from the cache. And limits set with the CLI survive
 * a restart of the server process.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { authed, startTestServer, type TestServer } from '../helpers/test-server.js';

let t: TestServer | undefined;
let other: Store | undefined;
afterEach(async () => {
  await other?.close();
  other = undefined;
  await t?.close();
  t = undefined;
});

const models = (apiKey = t!.apiKey) => fetch(`${t!.baseUrl}/openai/v1/models`, authed(apiKey)).then(async (r) => (await r.text(), r.status));
const chat = () =>
  fetch(`${t!.baseUrl}/openai/v1/chat/completions`, authed(t!.apiKey, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).then(
    async (r) => (await r.text(), r.status),
  );
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A second connection to the server's database file: what the keys CLI is to the server. */
async function otherProcessStore(): Promise<Store> {
  other = await openSqliteStore(path.join(t!.dir, 'kuma.sqlite'));
  return other;
}

describe('key cache', () => {
  it('a revocation by another process applies within the TTL (1 s by default)', async () => {
    t = await startTestServer();
    expect(await models()).toBe(200);
    expect(await (await otherProcessStore()).revokeKey(t.keyId)).toBe(true);
    await sleep(1000 + 50); // the stated bound, and no more
    expect(await models()).toBe(401);
  });

  it("serves a key from memory until its TTL, but this process's own revocation applies at once", async () => {
    t = await startTestServer({ config: { authCacheTtlMs: 600_000 } });
    const second = await t.newAccount(1_000_000);
    expect(await models()).toBe(200);
    expect(await models(second.apiKey)).toBe(200);
    // Another process revokes: the cached key still works (the cache is really in front of the store).
    expect(await (await otherProcessStore()).revokeKey(second.keyId)).toBe(true);
    expect(await models(second.apiKey)).toBe(200);
    // This process revokes: the cache is dropped, and both revocations now apply.
    expect(await t.server.store.revokeKey(t.keyId)).toBe(true);
    expect(await models()).toBe(401);
    expect(await models(second.apiKey)).toBe(401);
  });

  it('balances are never taken from the cache: a debit by another process refuses the next billable request', async () => {
    t = await startTestServer({ config: { authCacheTtlMs: 600_000 }, balanceMicros: 1_000_000 });
    expect(await chat()).toBe(400); // authenticated, funded, and the empty body refused
    await (await otherProcessStore()).credit(t.accountId, -1_000_000);
    expect(await chat()).toBe(402);
    await other!.credit(t.accountId, 5);
    expect(await chat()).toBe(400);
  });

  it('limits set by another process apply within the TTL; set by this process, at once', async () => {
    t = await startTestServer({ config: { rateLimits: true, authCacheTtlMs: 600_000 } });
    expect(await models()).toBe(200);
    await (await otherProcessStore()).setRateLimits(t.accountId, { requestsPerMinute: 1 });
    expect(await models()).toBe(200); // still the cached (default) limits
    await t.server.store.setRateLimits(t.keyId, { concurrent: 5 });
    // This process's change drops the cache: the other process's account limit (1 a minute) now applies.
    expect(await models()).toBe(200);
    expect(await models()).toBe(429);
  });
});

describe('limits survive a restart', () => {
  const procs: ReturnType<typeof spawn>[] = [];
  afterEach(() => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  });

  async function startProcess(dbPath: string): Promise<{ port: number; apiKey: string; accountId: string; proc: ReturnType<typeof spawn> }> {
    const proc = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/serve-with-probe.ts'], {
      env: { ...process.env, KUMA_DB_PATH: dbPath, KUMA_RATE_LIMITS: 'on' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    procs.push(proc);
    const line = await new Promise<string>((resolve, reject) => {
      readline.createInterface({ input: proc.stdout! }).once('line', resolve);
      proc.once('exit', (code) => reject(new Error(`server exited early (${code})`)));
    });
    return { ...(JSON.parse(line) as { port: number; apiKey: string; accountId: string }), proc };
  }

  it('a limit set with `npm run keys -- limits set` holds after the server process restarts', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-limits-'));
    try {
      const dbPath = path.join(dir, 'kuma.sqlite');
      const first = await startProcess(dbPath);
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', 'src/cli/keys.ts', 'limits', 'set', first.accountId, '--requests-per-minute', '1'],
        {
          env: { ...process.env, KUMA_DB_PATH: dbPath },
        },
      );
      expect(stdout).toContain(`Limits of account ${first.accountId}: requests 1 /min (set)`);
      first.proc.kill('SIGTERM');
      await new Promise((resolve) => first.proc.once('exit', resolve));

      const second = await startProcess(dbPath);
      const get = () => fetch(`http://127.0.0.1:${second.port}/openai/v1/models`, authed(first.apiKey));
      const ok = await get();
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-ratelimit-limit-requests')).toBe('1');
      const refused = await get();
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
