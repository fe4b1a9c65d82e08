/**
 * The ledger behind a real server: one unit of work writes one usage row and debits atomically, 50
 * concurrent requests lose no update, and a row acknowledged in a response survives `kill -9`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { meteredProbeRoute } from '../fixtures/metered-probe-route.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ balanceMicros: 50_000_000, extraRoutes: ({ ledger }) => [meteredProbeRoute(ledger)] });
});
afterAll(() => t.close());

const meter = (base: string, apiKey: string, seconds: number) =>
  fetch(`${base}/compat/v1/test/metered`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: JSON.stringify({ seconds }) });

describe('ledger over HTTP', () => {
  it('one unit of work writes exactly one usage row and debits its price', async () => {
    const acct = await t.newAccount(1_000_000);
    const res = await meter(t.baseUrl, acct.apiKey, 2.5);
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id')!;
    const rows = await t.server.store.listUsage({ accountId: acct.accountId });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      requestId,
      accountId: acct.accountId,
      keyId: acct.keyId,
      model: 'sunjata-1',
      unit: 'second',
      quantity: 2.5,
      unitPriceMicros: 100,
      costMicros: 250,
    });
    expect((await t.server.store.getAccount(acct.accountId))!.balanceMicros).toBe(1_000_000 - 250);
  });

  it('50 concurrent debits lose no update', async () => {
    const acct = await t.newAccount(1_000_000);
    const responses = await Promise.all(Array.from({ length: 50 }, () => meter(t.baseUrl, acct.apiKey, 1.37)));
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    const rows = await t.server.store.listUsage({ accountId: acct.accountId });
    expect(rows).toHaveLength(50);
    expect(new Set(rows.map((r) => r.requestId)).size).toBe(50);
    expect((await t.server.store.getAccount(acct.accountId))!.balanceMicros).toBe(1_000_000 - 50 * 137);
  });
});

describe('durability', () => {
  it('a usage row acknowledged by a response survives kill -9 of the server', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-kill-'));
    const dbPath = path.join(dir, 'kuma.sqlite');
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/serve-with-probe.ts'], {
      env: { ...process.env, KUMA_DB_PATH: dbPath },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: child.stdout! }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`server exited early (${code})`)));
      });
      const { port, apiKey, accountId } = JSON.parse(line);
      const res = await meter(`http://127.0.0.1:${port}`, apiKey, 4);
      child.kill('SIGKILL'); // right after the response: no chance to checkpoint or close cleanly
      expect(res.status).toBe(200);
      const requestId = res.headers.get('x-request-id');
      await new Promise((resolve) => child.once('exit', resolve));
      expect(child.signalCode).toBe('SIGKILL');

      const store = await openSqliteStore(dbPath);
      try {
        const rows = await store.listUsage({ requestId: requestId! });
        expect(rows).toHaveLength(1);
        expect(rows[0]).toMatchObject({ accountId, quantity: 4, costMicros: 400 });
        expect((await store.getAccount(accountId))!.balanceMicros).toBe(100_000_000 - 400);
      } finally {
        await store.close();
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
