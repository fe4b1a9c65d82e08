/**
 * The ledger: prices and rounding, the quota check, and charging — one row per item, the debit in the
 * same transaction, no lost update under concurrency, within one connection and across several.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { INSUFFICIENT_QUOTA_MESSAGE, Ledger, type ChargeItem } from '../../../src/billing/ledger.js';
import { PriceTableSchema, type PriceTable } from '../../../src/billing/prices.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Account, Store, UsageUnit } from '../../../src/store/store.js';

const workerFixtureUrl = new URL('../../fixtures/charge-worker.ts', import.meta.url).href;
const prices: PriceTable = PriceTableSchema.parse({});

let dir: string;
let dbPath: string;
let store: Store;
let ledger: Ledger;
let account: Account;
const keyId = 'key_0123456789ab';

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-ledger-'));
  dbPath = path.join(dir, 'kuma.sqlite');
  store = await openSqliteStore(dbPath);
  ledger = new Ledger(store, prices);
  account = await store.createAccount('ledger', 1_000_000);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const ctx = (requestId = 'req_1') => ({ requestId, accountId: account.id, keyId });
const seconds = (quantity: number): ChargeItem => ({ model: 'djelia-transcribe', kind: 'transcription', unit: 'second', quantity });
const balance = async () => (await store.getAccount(account.id))!.balanceMicros;

describe('priceOf', () => {
  it('maps each kind and unit to its price, tokens for translation included', () => {
    expect(ledger.priceOf('second', 'transcription')).toBe(prices.transcriptionPerSecond);
    expect(ledger.priceOf('character', 'translation')).toBe(prices.translationPerCharacter);
    expect(ledger.priceOf('token', 'translation')).toBe(prices.translationPerToken);
    expect(ledger.priceOf('character', 'speech')).toBe(prices.speechPerCharacter);
    expect(() => ledger.priceOf('character', 'transcription')).toThrow(/No price/);
  });
});

describe('costOf', () => {
  it('charges fractional quantities to the micro, rounding up, never down to free', () => {
    expect(ledger.costOf(1.5, 100)).toBe(150);
    expect(ledger.costOf(1 / 3, 100)).toBe(34);
    expect(ledger.costOf(0.001, 100)).toBe(1);
    expect(ledger.costOf(0.0001, 100)).toBe(1);
  });

  it('does not let float noise cost an extra micro, and charges nothing for nothing', () => {
    expect(ledger.costOf(0.1 + 0.2, 100)).toBe(30);
    expect(ledger.costOf(3, 15)).toBe(45);
    expect(Object.is(ledger.costOf(0, 100), 0)).toBe(true);
  });

  it('refuses negative or non-finite quantities and fractional prices', () => {
    expect(() => ledger.costOf(-1, 100)).toThrow(RangeError);
    expect(() => ledger.costOf(Number.NaN, 100)).toThrow(RangeError);
    expect(() => ledger.costOf(1, 1.5)).toThrow(RangeError);
  });
});

describe('assertCanAfford', () => {
  const withBalance = (balanceMicros: number): Account => ({ ...account, balanceMicros });

  it('refuses an empty, negative or insufficient balance with insufficient_quota (402)', async () => {
    for (const [bal, estimate] of [[0, undefined], [-5, undefined], [99, 100]] as const) {
      const error = await ledger.assertCanAfford(withBalance(bal), estimate).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ code: 'insufficient_quota', status: 402, message: INSUFFICIENT_QUOTA_MESSAGE });
    }
  });

  it('lets through a balance that covers the estimate', async () => {
    await expect(ledger.assertCanAfford(withBalance(1))).resolves.toBeUndefined();
    await expect(ledger.assertCanAfford(withBalance(100), 100)).resolves.toBeUndefined();
  });
});

describe('charge', () => {
  it('writes exactly one usage row and debits exactly its cost', async () => {
    const result = await ledger.charge(ctx(), [seconds(12.345)]);
    expect(result.records).toEqual([
      { ...ctx(), model: 'djelia-transcribe', unit: 'second', quantity: 12.345, unitPriceMicros: 100, costMicros: 1235 },
    ]);
    expect(result.balanceMicros).toBe(1_000_000 - 1235);
    expect(await balance()).toBe(1_000_000 - 1235);
    expect(await store.listUsage()).toHaveLength(1);
  });

  it('writes several items with one recordUsage call and skips zero quantities', async () => {
    const recordUsage = vi.spyOn(store, 'recordUsage');
    const result = await ledger.charge(ctx(), [
      seconds(2),
      { model: 'djelia-translate-v2', kind: 'translation', unit: 'token', quantity: 10 },
      { model: 'djelia-tts', kind: 'speech', unit: 'character', quantity: 0 },
    ]);
    expect(recordUsage).toHaveBeenCalledTimes(1);
    expect(result.records.map((r) => r.costMicros)).toEqual([200, 600]);
    expect(result.balanceMicros).toBe(1_000_000 - 800);
    expect((await store.listUsage({ requestId: 'req_1' })).map((r) => r.unit)).toEqual(['second', 'token']);
  });

  it('writes nothing and returns the balance when every item is zero', async () => {
    const recordUsage = vi.spyOn(store, 'recordUsage');
    expect(await ledger.charge(ctx(), [seconds(0)])).toEqual({ records: [], balanceMicros: 1_000_000 });
    expect(recordUsage).not.toHaveBeenCalled();
  });

  it('is atomic: when the second row violates the unit CHECK, neither row nor the debit lands', async () => {
    // A store whose second record is corrupted on its way in, so the failure happens inside the transaction.
    const corrupting: Store = {
      ...store,
      recordUsage: (records) => store.recordUsage(records.map((r, i) => (i === 1 ? { ...r, unit: 'minute' as UsageUnit } : r))),
    };
    const failing = new Ledger(corrupting, prices);
    await expect(failing.charge(ctx(), [seconds(1), seconds(2)])).rejects.toThrow(/CHECK constraint/);
    expect(await store.listUsage()).toEqual([]);
    expect(await balance()).toBe(1_000_000);
  });

  it('loses no update across 50 concurrent charges', async () => {
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => ledger.charge(ctx(`req_${i}`), [seconds(1.01)])));
    expect(results.every((r) => r.records.length === 1)).toBe(true);
    expect(await balance()).toBe(1_000_000 - 50 * 101);
    const rows = await store.listUsage({ accountId: account.id });
    expect(rows).toHaveLength(50);
    expect(new Set(rows.map((r) => r.requestId)).size).toBe(50);
    // Each charge saw a distinct balance after its own debit: the debits were serialized, not interleaved.
    expect(new Set(results.map((r) => r.balanceMicros)).size).toBe(50);
  });

  it('loses no update when several connections (worker threads) charge the same file at once', async () => {
    const workers = 4;
    const chargesPerWorker = 25;
    const spawned = Array.from({ length: workers }, (_, workerIndex) => {
      // Node 20 ignores `--import tsx` in a worker's execArgv for its main script, so a tiny ESM bootstrap
      // registers tsx's loader in the worker first and then imports the TypeScript fixture.
      const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(workerFixtureUrl)}); })`;
      const worker = new Worker(bootstrap, {
        eval: true,
        workerData: { dbPath, accountId: account.id, keyId, workerIndex, charges: chargesPerWorker, seconds: 1.25 },
      });
      let markReady!: () => void;
      const ready = new Promise<void>((resolve) => { markReady = resolve; });
      const done = new Promise<{ ok: boolean; error?: string }>((resolve, reject) => {
        worker.on('message', (m: { ready?: boolean; ok?: boolean; error?: string }) => (m.ready ? markReady() : resolve(m as { ok: boolean })));
        worker.once('error', reject);
        worker.once('exit', (code) => reject(new Error(`worker ${workerIndex} exited (${code}) before reporting`)));
      });
      return { worker, ready, done };
    });
    // Start them together only once every connection is open, so that their transactions overlap.
    await Promise.all(spawned.map((w) => w.ready));
    for (const { worker } of spawned) worker.postMessage('go');
    const outcomes = await Promise.all(spawned.map((w) => w.done));
    expect(outcomes).toEqual(Array.from({ length: workers }, () => ({ ok: true })));
    const total = workers * chargesPerWorker;
    expect(await balance()).toBe(1_000_000 - total * 125);
    const rows = await store.listUsage({ accountId: account.id });
    expect(rows).toHaveLength(total);
    expect(new Set(rows.map((r) => r.requestId)).size).toBe(total);
  });
});
