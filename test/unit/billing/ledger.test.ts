/**
 * The ledger: prices and rounding, the early quota check, and reservations — a hold taken atomically with
 * the check that the balance less every other hold covers it, settled (rows, debit and the hold's release
 * in one transaction) or released, renewed while live and expired when its process is gone — under
 * concurrency within one connection and across several (worker threads on one SQLite file).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { toApiError } from '../../../src/api/errors.js';
import { INSUFFICIENT_QUOTA_MESSAGE, InsufficientQuotaError } from '../../../src/billing/errors.js';
import { Ledger, type ChargeItem } from '../../../src/billing/ledger.js';
import { PriceTableSchema, type PriceTable } from '../../../src/config/prices.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import { KeyRevokedError } from '../../../src/store/store-errors.js';
import type { Account, NewUsageRecord, Store, UsageUnit } from '../../../src/store/store.js';

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

const ctx = (requestId = 'req_1', accountId = account.id) => ({ requestId, accountId, keyId });
const seconds = (quantity: number): ChargeItem => ({ model: 'djelia-transcribe', kind: 'transcription', unit: 'second', quantity });
const balance = async (id = account.id) => (await store.getAccount(id))!.balanceMicros;
const available = (id = account.id) => store.availableMicros(id, Date.now());

describe('priceOf and costOf', () => {
  it('maps each kind and unit to its price, tokens for translation included', () => {
    expect(ledger.priceOf('second', 'transcription')).toBe(prices.transcriptionPerSecond);
    expect(ledger.priceOf('character', 'translation')).toBe(prices.translationPerCharacter);
    expect(ledger.priceOf('token', 'translation')).toBe(prices.translationPerToken);
    expect(ledger.priceOf('character', 'speech')).toBe(prices.speechPerCharacter);
    expect(() => ledger.priceOf('character', 'transcription')).toThrow(/No price/);
  });

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
    expect(ledger.costOfItems([seconds(1.01), seconds(0.001)])).toBe(102);
  });

  it('refuses negative or non-finite quantities and fractional prices', () => {
    expect(() => ledger.costOf(-1, 100)).toThrow(RangeError);
    expect(() => ledger.costOf(Number.NaN, 100)).toThrow(RangeError);
    expect(() => ledger.costOf(1, 1.5)).toThrow(RangeError);
  });
});

describe('settlePart (work settled piece by piece as it is delivered)', () => {
  const chars = (quantity: number): ChargeItem => ({ model: 'jifili-1', kind: 'speech', unit: 'character', quantity });

  it('each part charges its rows at once and takes its cost off the hold; growBy adds to what is held now', async () => {
    const reservation = await ledger.reserve(ctx(), 0);
    await reservation.growBy(ledger.costOf(20, 15));
    await reservation.growBy(ledger.costOf(30, 15));
    expect(reservation.heldMicros).toBe(750);
    await reservation.settlePart([chars(20)]);
    expect(await balance()).toBe(1_000_000 - 300);
    expect(reservation.heldMicros).toBe(450);
    expect(await available()).toBe(1_000_000 - 300 - 450);
    await reservation.growBy(ledger.costOf(10, 15));
    await reservation.settlePart([chars(30)]);
    await reservation.settlePart([chars(0)]); // nothing to charge: no row
    expect(reservation.heldMicros).toBe(150);
    // The socket ends before the last piece was delivered: released, so it costs nothing.
    await reservation.release();
    expect(await balance()).toBe(1_000_000 - 750);
    expect(await available()).toBe(1_000_000 - 750);
    expect((await store.listUsage({ accountId: account.id })).map((r) => r.quantity)).toEqual([20, 30]);
    expect(ledger.openReservations).toBe(0);
    await expect(reservation.settlePart([chars(1)])).rejects.toThrow(/already closed/);
  });

  it('growBy past what is available: InsufficientQuotaError, and the hold keeps what it had', async () => {
    const reservation = await ledger.reserve(ctx(), 0);
    await reservation.growBy(900_000);
    await expect(reservation.growBy(200_000)).rejects.toThrow(InsufficientQuotaError);
    expect(reservation.heldMicros).toBe(900_000);
    await reservation.release();
  });
});

describe('assertCanStart (the early refusal)', () => {
  it('refuses an empty or negative balance, and one wholly held by requests in flight', async () => {
    const empty = await store.createAccount('empty', 0);
    const negative = await store.createAccount('negative', -5);
    const held = await store.createAccount('held', 300);
    await ledger.reserve(ctx('req_h', held.id), 300);
    for (const id of [empty.id, negative.id, held.id]) {
      const error = await ledger.assertCanStart(id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InsufficientQuotaError);
      expect(error).toMatchObject({ accountId: id, message: INSUFFICIENT_QUOTA_MESSAGE });
    }
    await expect(ledger.assertCanStart(account.id)).resolves.toBeUndefined();
  });

  it('is a billing error that only the API maps to 402 insufficient_quota', () => {
    expect(toApiError(new InsufficientQuotaError('acct_x', 10, 0))).toMatchObject({
      status: 402,
      code: 'insufficient_quota',
      type: 'insufficient_quota',
      message: INSUFFICIENT_QUOTA_MESSAGE,
    });
  });
});

describe('reserve, settle and release', () => {
  it('settling writes one row per item, debits exactly their cost and drops the hold, in one transaction', async () => {
    const reservation = await ledger.reserve(ctx(), 2000);
    expect(await available()).toBe(1_000_000 - 2000);
    const recordUsage = vi.spyOn(store, 'recordUsage');
    const result = await reservation.settle([seconds(12.345), { model: 'djelia-translate-v2', kind: 'translation', unit: 'token', quantity: 10 }, seconds(0)]);
    expect(recordUsage).toHaveBeenCalledTimes(1);
    expect(recordUsage.mock.calls[0]![1]).toEqual({ releaseHoldId: reservation.id });
    expect(result.records.map((r) => [r.unit, r.costMicros])).toEqual([
      ['second', 1235],
      ['token', 600],
    ]);
    expect(result.balanceMicros).toBe(1_000_000 - 1835);
    expect(await balance()).toBe(1_000_000 - 1835);
    expect(await available()).toBe(1_000_000 - 1835); // the hold is gone with the debit
    expect(ledger.openReservations).toBe(0);
  });

  it('a session charge (requireActiveKey) to a key revoked since it was held is refused: no row, no debit, the hold freed', async () => {
    const key = await store.createKey(account.id, 'a'.repeat(64), 'session');
    const session = { requestId: 'sess_1', accountId: account.id, keyId: key.id, requireActiveKey: true };
    await (await ledger.reserve(session, 300)).settle([seconds(1)]);
    const held = await ledger.reserve(session, 300);
    await store.revokeKey(key.id);
    await expect(held.settle([seconds(1)])).rejects.toBeInstanceOf(KeyRevokedError);
    expect((await store.listUsage()).map((r) => r.quantity)).toEqual([1]);
    expect(await balance()).toBe(1_000_000 - 100);
    expect(await available()).toBe(1_000_000 - 100);
    expect(ledger.openReservations).toBe(0);
    // A REST request's reservation (no requireActiveKey) still settles what it delivered.
    await (await ledger.reserve({ requestId: 'req_rest', accountId: account.id, keyId: key.id }, 300)).settle([seconds(1)]);
    expect(await balance()).toBe(1_000_000 - 200);
  });

  it('settling nothing writes nothing and frees the hold', async () => {
    const reservation = await ledger.reserve(ctx(), 500);
    expect(await reservation.settle([seconds(0)])).toEqual({ records: [], balanceMicros: 1_000_000 });
    expect(await store.listUsage()).toEqual([]);
    expect(await available()).toBe(1_000_000);
  });

  it('release charges nothing, frees the hold, and is a no-op once closed; a second settle is an error', async () => {
    const released = await ledger.reserve(ctx('req_a'), 700);
    await released.release();
    await released.release();
    expect(await available()).toBe(1_000_000);
    await expect(released.settle([seconds(1)])).rejects.toThrow(/already closed/);

    const settled = await ledger.reserve(ctx('req_b'), 700);
    await settled.settle([seconds(1)]);
    await settled.release(); // what every handler's finally does
    expect(await balance()).toBe(1_000_000 - 100);
    expect(await store.listUsage()).toHaveLength(1);
  });

  it('refuses a hold the balance less other holds cannot cover, holding nothing', async () => {
    const first = await ledger.reserve(ctx('req_1'), 999_000);
    const error = await ledger.reserve(ctx('req_2'), 1001).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InsufficientQuotaError);
    expect(error).toMatchObject({ neededMicros: 1001, availableMicros: 1000 });
    expect(await available()).toBe(1000);
    await expect(ledger.reserve(ctx('req_3'), 1000)).resolves.toBeDefined(); // exactly what is left
    await first.release();
  });

  it('refuses even a free hold when nothing is available', async () => {
    await ledger.reserve(ctx('req_1'), 1_000_000);
    await expect(ledger.reserve(ctx('req_2'), 0)).rejects.toBeInstanceOf(InsufficientQuotaError);
  });

  it('growTo raises the hold when the rest of the balance covers it, and refuses (unchanged) when not', async () => {
    const a = await ledger.reserve(ctx('req_a'), 400_000);
    await ledger.reserve(ctx('req_b'), 500_000);
    await a.growTo(450_000);
    await a.growTo(100); // never lowers
    expect(a.heldMicros).toBe(450_000);
    expect(await available()).toBe(50_000);
    await expect(a.growTo(500_001)).rejects.toBeInstanceOf(InsufficientQuotaError);
    expect(a.heldMicros).toBe(450_000);
    expect(await available()).toBe(50_000);
  });

  it('is atomic: when the second row violates the unit CHECK, neither row nor the debit lands, and the hold is freed', async () => {
    const corrupting: Store = {
      ...store,
      recordUsage: (records, options) =>
        store.recordUsage(
          records.map((r, i) => (i === 1 ? { ...r, unit: 'minute' as UsageUnit } : r)),
          options,
        ),
    };
    const failing = new Ledger(corrupting, prices);
    const reservation = await failing.reserve(ctx(), 1000);
    await expect(reservation.settle([seconds(1), seconds(2)])).rejects.toThrow(/CHECK constraint/);
    expect(await store.listUsage()).toEqual([]);
    expect(await balance()).toBe(1_000_000);
    expect(await available()).toBe(1_000_000);
  });

  it('tells onUsage exactly what each settlement recorded', async () => {
    const seen: NewUsageRecord[][] = [];
    const metered = new Ledger(store, prices, { onUsage: (records) => seen.push([...records]) });
    await (await metered.reserve(ctx('req_1'), 1000)).settle([seconds(2.5)]);
    await (await metered.reserve(ctx('req_2'), 1000)).release();
    expect(seen).toEqual([await store.listUsage()].map((rows) => rows.map(({ id: _id, createdAt: _at, ...r }) => r)));
  });
});

describe('holds left by a process that is gone', () => {
  it('a live reservation is renewed; an abandoned one stops counting once its TTL passes', async () => {
    let now = 1_000_000;
    const clock = () => now;
    const live = new Ledger(store, prices, { now: clock, holdTtlMs: 1000, renewEveryMs: 5 });
    const crashed = new Ledger(store, prices, { now: clock, holdTtlMs: 1000, renewEveryMs: 3_600_000 });
    const other = new Ledger(store, prices, { now: clock });
    const kept = await live.reserve(ctx('req_live'), 600_000);
    await crashed.reserve(ctx('req_crashed'), 400_000); // never closed: its process "died"
    now += 900;
    await sleep(40); // the live ledger renews its hold to now + 1000
    now += 900; // past the first expiry: only the renewed hold still counts
    expect(await store.availableMicros(account.id, now)).toBe(400_000);
    await expect(other.reserve(ctx('req_new'), 400_000)).resolves.toBeDefined();
    await expect(other.reserve(ctx('req_more'), 1)).rejects.toBeInstanceOf(InsufficientQuotaError);
    await kept.settle([seconds(1)]);
  });

  it('expired holds are cleared when the store is opened again', async () => {
    await store.placeHold({ id: 'hold_old', accountId: account.id, requestId: 'req_old', amountMicros: 5, expiresAt: Date.now() - 1 }, 0);
    await store.close();
    store = await openSqliteStore(dbPath);
    expect(await store.availableMicros(account.id, 0)).toBe(1_000_000); // gone even for a clock before its expiry
  });
});

describe('concurrency', () => {
  it('200 concurrent requests on a 2,000-micro balance: exactly the affordable ones run, never below zero', async () => {
    const small = await store.createAccount('small', 2000);
    const outcomes = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const r = await ledger.reserve(ctx(`req_${i}`, small.id), 150).catch((e: unknown) => e);
        if (r instanceof InsufficientQuotaError) return 'refused';
        if (r instanceof Error || !r || typeof r !== 'object') throw r;
        await tick();
        await (r as Awaited<ReturnType<Ledger['reserve']>>).settle([seconds(1.5)]);
        return 'settled';
      }),
    );
    expect(outcomes.filter((o) => o === 'settled')).toHaveLength(13); // floor(2000 / 150)
    expect(await balance(small.id)).toBe(2000 - 13 * 150);
    const rows = await store.listUsage({ accountId: small.id });
    expect(rows.reduce((s, r) => s + r.costMicros, 0)).toBe(13 * 150);
  });

  it('for any mix of holds and smaller settlements: balance ≥ 0, rows = debit, every hold gone', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 5000 }),
        fc.array(fc.record({ hold: fc.integer({ min: 0, max: 1500 }), share: fc.double({ min: 0, max: 1, noNaN: true }), fail: fc.boolean() }), {
          minLength: 1,
          maxLength: 60,
        }),
        async (start, requests) => {
          const acct = await store.createAccount('prop', start);
          await Promise.all(
            requests.map(async ({ hold, share, fail }, i) => {
              const r = await ledger.reserve(ctx(`req_${i}`, acct.id), hold).catch((e: unknown) => e);
              if (r instanceof InsufficientQuotaError) return;
              if (!(r instanceof Object) || r instanceof Error) throw r;
              const reservation = r as Awaited<ReturnType<Ledger['reserve']>>;
              await tick();
              // Settle at most what was held (a delivered share of the bound), or fail and release.
              if (fail) await reservation.release();
              else await reservation.settle([seconds(Math.floor(hold * share) / 100)]);
            }),
          );
          const end = await balance(acct.id);
          const rows = await store.listUsage({ accountId: acct.id });
          expect(end).toBeGreaterThanOrEqual(0);
          expect(rows.reduce((s, r) => s + r.costMicros, 0)).toBe(start - end);
          expect(await available(acct.id)).toBe(end);
        },
      ),
      { seed: 20260901, numRuns: 40 },
    );
  });

  it('several connections (worker threads) reserving on one file: no lost update, and holds cannot overlap-spend', async () => {
    const run = async (accountId: string, holdSeconds: number, settleSeconds: number) => {
      const workers = 4;
      const spawned = Array.from({ length: workers }, (_, workerIndex) => {
        // Node 20 ignores `--import tsx` in a worker's execArgv for its main script, so a tiny ESM bootstrap
        // registers tsx's loader in the worker first and then imports the TypeScript fixture.
        const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(workerFixtureUrl)}); })`;
        const worker = new Worker(bootstrap, { eval: true, workerData: { dbPath, accountId, keyId, workerIndex, charges: 25, holdSeconds, settleSeconds } });
        let markReady!: () => void;
        const ready = new Promise<void>((resolve) => (markReady = resolve));
        const done = new Promise<{ ok: boolean; settled: number; refused: number; error?: string }>((resolve, reject) => {
          worker.on('message', (m: { ready?: boolean }) => (m.ready ? markReady() : resolve(m as never)));
          worker.once('error', reject);
          worker.once('exit', (code) => reject(new Error(`worker ${workerIndex} exited (${code}) before reporting`)));
        });
        return { worker, ready, done };
      });
      // Start them together only once every connection is open, so that their transactions overlap.
      await Promise.all(spawned.map((w) => w.ready));
      for (const { worker } of spawned) worker.postMessage('go');
      const outcomes = await Promise.all(spawned.map((w) => w.done));
      expect(outcomes.map((o) => o.error)).toEqual([undefined, undefined, undefined, undefined]);
      return outcomes.reduce((sum, o) => sum + o.settled, 0);
    };

    // Plenty of money: all 100 settle, each exactly once.
    expect(await run(account.id, 1.25, 1.25)).toBe(100);
    expect(await balance()).toBe(1_000_000 - 100 * 125);
    expect(new Set((await store.listUsage({ accountId: account.id })).map((r) => r.requestId)).size).toBe(100);

    // 40 holds' worth of money for 100 requests on 4 connections: exactly 40 run, none overdraws.
    const tight = await store.createAccount('tight', 40 * 125);
    expect(await run(tight.id, 1.25, 1.25)).toBe(40);
    expect(await balance(tight.id)).toBe(0);
    expect(await store.listUsage({ accountId: tight.id })).toHaveLength(40);
    expect(await available(tight.id)).toBe(0);
  }, 60_000);
});
