/**
 * Group commit: every caller of sync() waits for an fdatasync that started after its call (so its commit
 * is covered), and callers that arrive while one runs share a single next one instead of queuing one each.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WalSync } from '../../../src/store/wal-sync.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-wal-'));
  dirs.push(dir);
  const file = path.join(dir, 'db-wal');
  fs.writeFileSync(file, 'x');
  return file;
}

/** A controllable fdatasync: each call waits until the test lets it finish. */
function manualSync() {
  const calls: Array<{ finish: () => void; startedAt: number }> = [];
  let clock = 0;
  const syncFile = (): Promise<void> => new Promise((resolve) => calls.push({ finish: resolve, startedAt: ++clock }));
  return { calls, syncFile, tick: () => ++clock };
}

describe('WalSync', () => {
  it('one caller gets one fdatasync', async () => {
    const { calls, syncFile } = manualSync();
    const wal = new WalSync(tempFile(), syncFile);
    const done = wal.sync();
    expect(calls).toHaveLength(1);
    calls[0]!.finish();
    await done;
    wal.close();
  });

  it('callers arriving during a sync share the next one, which starts when the running one ends', async () => {
    const { calls, syncFile } = manualSync();
    const wal = new WalSync(tempFile(), syncFile);
    const order: string[] = [];
    const first = wal.sync().then(() => order.push('first'));
    const later = Array.from({ length: 10 }, (_, i) => wal.sync().then(() => order.push(`later${i}`)));
    expect(calls).toHaveLength(1); // nothing new starts while one runs
    calls[0]!.finish();
    await first;
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['first']); // the running sync may have begun before their commits: not enough
    expect(calls).toHaveLength(2);
    calls[1]!.finish();
    await Promise.all(later);
    expect(order).toHaveLength(11);
    expect(calls).toHaveLength(2);
    wal.close();
  });

  it('a failed fdatasync rejects its callers, and the next caller gets a fresh one', async () => {
    let fail = true;
    const wal = new WalSync(tempFile(), async () => {
      if (fail) throw new Error('EIO');
    });
    await expect(wal.sync()).rejects.toThrow('EIO');
    fail = false;
    await expect(wal.sync()).resolves.toBeUndefined();
    wal.close();
  });

  it('the store waits for the WAL to be synced before a write resolves, and reads back what it wrote after reopening', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-wal-store-'));
    dirs.push(dir);
    const file = path.join(dir, 'kuma.sqlite');
    const store = await openSqliteStore(file);
    const account = await store.createAccount('a', 1_000_000);
    const key = await store.createKey(account.id, 'hash', 'test');
    const records = Array.from({ length: 20 }, (_, i) => ({
      requestId: `req_${i}`,
      accountId: account.id,
      keyId: key.id,
      model: 'm',
      unit: 'character' as const,
      quantity: 1,
      unitPriceMicros: 10,
      costMicros: 10,
    }));
    await Promise.all(records.map((record) => store.recordUsage([record])));
    await store.close();
    const reopened = await openSqliteStore(file);
    expect((await reopened.getAccount(account.id))!.balanceMicros).toBe(1_000_000 - 200);
    expect(await reopened.listUsage({ accountId: account.id })).toHaveLength(20);
    await reopened.close();
  });
});
