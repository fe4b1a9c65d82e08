/**
 * The Store contract: what every Store implementation (SQLite, PostgreSQL) must do, as one vitest suite
 * that a test file runs against its store. Accounts and keys, the usage ledger's all-or-nothing settlement
 * and its idempotency, holds under concurrency (from several store instances on one database, as several
 * processes or nodes would), rate-limit overrides, client and server secrets, webhooks, call records, and
 * the admin API's keys, audit trail and per-day usage.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewUsageRecord, Store, UsageUnit } from '../../src/store/store.js';
import { KeyRevokedError } from '../../src/store/store-errors.js';

export interface StoreHarness {
  store: Store;
  /** Another Store on the same database (another process or node), closed by `close()`. */
  openAnother(): Promise<Store>;
  /** Moves a request's usage rows to another instant (recordUsage always stamps the present). */
  backdateUsage(requestId: string, iso: string): Promise<void>;
  close(): Promise<void>;
}

export function usage(accountId: string, overrides: Partial<NewUsageRecord> = {}): NewUsageRecord {
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

const none = { requestsPerMinute: null, tokensPerMinute: null, concurrent: null };

export function describeStoreContract(name: string, open: () => Promise<StoreHarness>): void {
  describe(`Store contract: ${name}`, () => {
    let harness: StoreHarness;
    let store: Store;

    beforeEach(async () => {
      harness = await open();
      store = harness.store;
    });
    afterEach(async () => {
      await harness.close();
    });

    describe('accounts', () => {
      it('creates, lists, counts and credits accounts with ISO UTC timestamps', async () => {
        const a = await store.createAccount('alpha', 1_000_000);
        const b = await store.createAccount('beta', 0);
        expect(a.id).toMatch(/^acct_[0-9a-f]{12}$/);
        expect(a.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(await store.getAccount(a.id)).toEqual(a);
        expect((await store.listAccounts()).map((x) => x.id)).toEqual([a.id, b.id]);
        expect(await store.countAccounts()).toBe(2);
        expect((await store.credit(a.id, 250)).balanceMicros).toBe(1_000_250);
        expect((await store.credit(a.id, -2_000_000)).balanceMicros).toBe(-999_750);
        expect(await store.getAccount('acct_missing')).toBeUndefined();
      });

      it('keeps balances beyond 2^32 micros exactly, and refuses unknown accounts and fractional amounts', async () => {
        const big = await store.createAccount('big', 2 ** 40 + 7);
        expect((await store.credit(big.id, 2 ** 41)).balanceMicros).toBe(2 ** 40 + 2 ** 41 + 7);
        await expect(store.credit('acct_000000000000', 5)).rejects.toThrow(/Unknown account/);
        await expect(store.credit(big.id, 0.5)).rejects.toThrow(RangeError);
        await expect(store.createAccount('x', 1.5)).rejects.toThrow(RangeError);
      });
    });

    describe('keys', () => {
      it('finds an active key by hash with its account, and stops finding it once revoked', async () => {
        const account = await store.createAccount('k', 10);
        const key = await store.createKey(account.id, 'a'.repeat(64), 'ci');
        expect(key).toMatchObject({ accountId: account.id, label: 'ci', revokedAt: null });
        expect(key.id).toMatch(/^key_[0-9a-f]{12}$/);
        expect(await store.findKeyByHash('a'.repeat(64))).toEqual({ key, keyHash: 'a'.repeat(64), account, limits: { account: none, key: none } });
        expect(await store.getKey(key.id)).toEqual(key);
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
        const c = await store.createKey(other.id, 'c'.repeat(64), 'two');
        expect(await store.listKeys(a.id)).toEqual([b]);
        expect(await store.listKeys()).toEqual([b, c]);
        await expect(store.createKey(a.id, 'b'.repeat(64), 'dup')).rejects.toThrow(/unique/i);
        await expect(store.createKey('acct_nope', 'd'.repeat(64), 'x')).rejects.toThrow(/foreign key/i);
      });
    });

    describe('recordUsage', () => {
      it('writes exactly one row and debits exactly its cost', async () => {
        const a = await store.createAccount('u', 1_000);
        const { balances } = await store.recordUsage([usage(a.id)]);
        expect(balances).toEqual({ [a.id]: 850 });
        const rows = await store.listUsage();
        expect(rows).toHaveLength(1);
        expect(rows[0]).toEqual({ ...usage(a.id), id: expect.any(Number), createdAt: expect.stringMatching(/Z$/) });
        expect((await store.getAccount(a.id))!.balanceMicros).toBe(850);
      });

      it('writes nothing and debits nothing when one record violates the unit CHECK', async () => {
        const a = await store.createAccount('u', 1_000);
        const bad = usage(a.id, { unit: 'minute' as UsageUnit, costMicros: 300 });
        await expect(store.recordUsage([usage(a.id), bad])).rejects.toThrow(/check constraint/i);
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

      it('filters usage by account and request, and lists the latest N oldest first', async () => {
        const a = await store.createAccount('a', 1_000);
        const b = await store.createAccount('b', 1_000);
        await store.recordUsage([usage(a.id, { requestId: 'r1' }), usage(b.id, { requestId: 'r2' })]);
        await store.recordUsage([usage(a.id, { requestId: 'r3' })]);
        await store.recordUsage([usage(a.id, { requestId: 'r4' })]);
        expect((await store.listUsage({ accountId: a.id })).map((r) => r.requestId)).toEqual(['r1', 'r3', 'r4']);
        expect((await store.listUsage({ requestId: 'r2' })).map((r) => r.accountId)).toEqual([b.id]);
        expect(await store.listUsage({ accountId: a.id, requestId: 'r2' })).toEqual([]);
        expect((await store.listUsage({ accountId: a.id, latest: 2 })).map((r) => r.requestId)).toEqual(['r3', 'r4']);
      });
    });

    describe('idempotent settlement', () => {
      const now = () => Date.now();
      const hold = (accountId: string, id: string, amountMicros: number) => ({ id, accountId, requestId: 'req_1', amountMicros, expiresAt: now() + 60_000 });

      it('a retried settlement of the same hold writes no row and debits nothing more', async () => {
        const a = await store.createAccount('a', 10_000);
        expect((await store.placeHold(hold(a.id, 'hold_r', 2_000), now())).placed).toBe(true);
        const rows = [usage(a.id, { unit: 'second', costMicros: 150 }), usage(a.id, { unit: 'character', quantity: 40, costMicros: 800 })];
        expect((await store.recordUsage(rows, { releaseHoldId: 'hold_r' })).balances).toEqual({ [a.id]: 9_050 });
        expect((await store.recordUsage(rows, { releaseHoldId: 'hold_r' })).balances).toEqual({ [a.id]: 9_050 });
        expect(await store.listUsage({ accountId: a.id })).toHaveLength(2);
        expect(await store.availableMicros(a.id, now())).toBe(9_050);
      });

      it('parts of one hold: each writes its rows, debits them and shrinks the hold by as much; a retried part changes nothing', async () => {
        const a = await store.createAccount('a', 10_000);
        await store.placeHold(hold(a.id, 'hold_p', 3_000), now());
        const part = (n: number, costMicros: number) =>
          store.recordUsage([usage(a.id, { unit: 'character', quantity: costMicros / 15, unitPriceMicros: 15, costMicros })], {
            partOfHold: { holdId: 'hold_p', part: n },
          });
        expect((await part(1, 600)).balances).toEqual({ [a.id]: 9_400 });
        // Identical rows in another part are another charge; the same part again is not.
        expect((await part(2, 600)).balances).toEqual({ [a.id]: 8_800 });
        expect((await part(2, 600)).balances).toEqual({ [a.id]: 8_800 });
        // Balance 8_800, still held 3_000 − 1_200.
        expect(await store.availableMicros(a.id, now())).toBe(8_800 - 1_800);
        expect(await store.listUsage({ accountId: a.id })).toHaveLength(2);
        // A part larger than what is left held takes the hold to 0, never below; the rest is released.
        await part(3, 2_400);
        expect(await store.availableMicros(a.id, now())).toBe(6_400);
        await store.releaseHold('hold_p');
        expect(await store.availableMicros(a.id, now())).toBe(6_400);
      });

      it('identical rows of one request settled by different holds (two call turns) are both charged', async () => {
        const a = await store.createAccount('a', 10_000);
        for (const id of ['hold_t1', 'hold_t2']) {
          await store.placeHold(hold(a.id, id, 150), now());
          await store.recordUsage([usage(a.id)], { releaseHoldId: id });
        }
        // Writes without a hold id are never deduplicated either.
        await store.recordUsage([usage(a.id)]);
        await store.recordUsage([usage(a.id)]);
        expect(await store.listUsage({ requestId: 'req_1' })).toHaveLength(4);
        expect((await store.getAccount(a.id))!.balanceMicros).toBe(10_000 - 4 * 150);
      });
    });

    describe('revoked keys', () => {
      const now = () => Date.now();
      const hold = (accountId: string, id: string, amountMicros: number) => ({ id, accountId, requestId: 'req_1', amountMicros, expiresAt: now() + 60_000 });

      it('inactiveKeyIds names the revoked and unknown ones among the ids given, in one call, as any instance sees them', async () => {
        const a = await store.createAccount('a', 0);
        const live = await store.createKey(a.id, 'e'.repeat(64), 'live');
        const gone = await store.createKey(a.id, 'f'.repeat(64), 'gone');
        expect(await store.inactiveKeyIds([])).toEqual([]);
        expect(await store.inactiveKeyIds([live.id, gone.id])).toEqual([]);
        const other = await harness.openAnother();
        expect(await other.revokeKey(gone.id)).toBe(true);
        expect((await store.inactiveKeyIds([live.id, gone.id, 'key_unknown', gone.id])).sort()).toEqual([gone.id, 'key_unknown'].sort());
      });

      it('a settlement with requireActiveKey is refused once the key is revoked: no row, no debit, the hold left to release', async () => {
        const a = await store.createAccount('a', 10_000);
        const key = await store.createKey(a.id, '1'.repeat(64), 'session');
        const row = usage(a.id, { keyId: key.id });
        await store.placeHold(hold(a.id, 'hold_before', 150), now());
        expect((await store.recordUsage([row], { releaseHoldId: 'hold_before', requireActiveKey: true })).balances).toEqual({ [a.id]: 9_850 });
        await store.placeHold(hold(a.id, 'hold_after', 150), now());
        expect(await (await harness.openAnother()).revokeKey(key.id)).toBe(true);
        const refused = store.recordUsage([row], { releaseHoldId: 'hold_after', requireActiveKey: true });
        await expect(refused).rejects.toThrow(KeyRevokedError);
        await expect(refused).rejects.toMatchObject({ keyId: key.id });
        expect(await store.listUsage({ accountId: a.id })).toHaveLength(1);
        expect((await store.getAccount(a.id))!.balanceMicros).toBe(9_850);
        expect(await store.availableMicros(a.id, now())).toBe(9_700); // the hold is the caller's to release
        await store.releaseHold('hold_after');
        // Without requireActiveKey (REST work admitted before the revocation) the charge is written.
        await store.recordUsage([row]);
        expect(await store.listUsage({ accountId: a.id })).toHaveLength(2);
      });

      it('settlements racing a revocation from two instances: the ones that land are stamped before revoked_at, the ones after are refused', async () => {
        const a = await store.createAccount('a', 1_000_000);
        const key = await store.createKey(a.id, '2'.repeat(64), 'raced');
        const other = await harness.openAnother();
        let landed = 0;
        let refused = 0;
        let revoked = false;
        // Two "processes" settle one charge after another while a third revokes the key midway.
        const settleLoop = async (on: Store, prefix: string) => {
          for (let i = 0; i < 20; i++) {
            const id = `${prefix}_${i}`;
            await on.placeHold(hold(a.id, id, 150), now());
            const startedAfterRevocation = revoked;
            try {
              await on.recordUsage([usage(a.id, { keyId: key.id, requestId: id })], { releaseHoldId: id, requireActiveKey: true });
              expect(startedAfterRevocation).toBe(false);
              landed++;
            } catch (err) {
              expect(err).toBeInstanceOf(KeyRevokedError);
              await on.releaseHold(id);
              refused++;
            }
          }
        };
        const revoker = async () => {
          while (landed < 10) await new Promise((resolve) => setImmediate(resolve));
          expect(await (await harness.openAnother()).revokeKey(key.id)).toBe(true);
          revoked = true;
        };
        await Promise.all([settleLoop(store, 'one'), settleLoop(other, 'two'), revoker()]);
        expect(landed).toBeGreaterThanOrEqual(10);
        expect(refused).toBeGreaterThan(0);
        expect(landed + refused).toBe(40);
        const revokedAt = (await store.getKey(key.id))!.revokedAt!;
        const rows = await store.listUsage({ accountId: a.id });
        expect(rows).toHaveLength(landed);
        for (const r of rows) expect(r.createdAt <= revokedAt).toBe(true);
        expect((await store.getAccount(a.id))!.balanceMicros).toBe(1_000_000 - 150 * landed);
        expect(await store.availableMicros(a.id, now())).toBe(1_000_000 - 150 * landed);
      });
    });

    describe('holds', () => {
      it('counts live holds against the balance, drops expired ones, grows and releases', async () => {
        const a = await store.createAccount('h', 1_000);
        const t = 1_000_000;
        expect(await store.placeHold({ id: 'h1', accountId: a.id, requestId: 'r1', amountMicros: 600, expiresAt: t + 100 }, t)).toEqual({
          placed: true,
          availableMicros: 400,
        });
        expect(await store.placeHold({ id: 'h2', accountId: a.id, requestId: 'r2', amountMicros: 500, expiresAt: t + 100 }, t)).toEqual({
          placed: false,
          availableMicros: 400,
        });
        expect(await store.placeHold({ id: 'h3', accountId: a.id, requestId: 'r3', amountMicros: 0, expiresAt: t + 100 }, t)).toEqual({
          placed: true,
          availableMicros: 400,
        });
        expect(await store.growHold('h1', 400, t)).toEqual({ placed: true, availableMicros: 0 });
        expect(await store.growHold('h1', 1, t)).toEqual({ placed: false, availableMicros: 0 });
        // Nothing available: even free work cannot start.
        expect((await store.placeHold({ id: 'h4', accountId: a.id, requestId: 'r4', amountMicros: 0, expiresAt: t + 100 }, t)).placed).toBe(false);
        await store.renewHolds(['h1'], t + 10_000);
        expect(await store.availableMicros(a.id, t + 500)).toBe(0);
        await expect(store.growHold('h3', 1, t + 500)).rejects.toThrow(/no longer exists/);
        await store.releaseHold('h1');
        await store.releaseHold('h1');
        expect(await store.availableMicros(a.id, t + 500)).toBe(1_000);
        await expect(store.placeHold({ id: 'h5', accountId: 'acct_none', requestId: 'r', amountMicros: 1, expiresAt: t + 100 }, t)).rejects.toThrow(
          /Unknown account/,
        );
        await expect(store.availableMicros('acct_none', t)).rejects.toThrow(/Unknown account/);
      });

      it('50 concurrent reserve-and-settle requests from two store instances never spend past the balance', async () => {
        const other = await harness.openAnother();
        const a = await store.createAccount('race', 10_000);
        const now = Date.now();
        const placedIds: string[] = [];
        const outcomes = await Promise.all(
          Array.from({ length: 50 }, async (_, i) => {
            const s = i % 2 ? other : store;
            const id = `hold_race_${i}`;
            const outcome = await s.placeHold({ id, accountId: a.id, requestId: `req_${i}`, amountMicros: 700, expiresAt: now + 60_000 }, now);
            if (!outcome.placed) return outcome;
            placedIds.push(id);
            expect(outcome.availableMicros).toBeGreaterThanOrEqual(0);
            // Settle for less than held (as callers do), sometimes growing first, sometimes retried.
            if (i % 3 === 0) await s.growHold(id, 100, now);
            const rows = [
              usage(a.id, { requestId: `req_${i}`, costMicros: 300 + i }),
              usage(a.id, { requestId: `req_${i}`, unit: 'character', costMicros: 1 }),
            ];
            await s.recordUsage(rows, { releaseHoldId: id });
            if (i % 5 === 0) await other.recordUsage(rows, { releaseHoldId: id });
            return outcome;
          }),
        );
        // 10_000 / 700: at most 14 holds can ever be live at once; settlements free money for later ones.
        expect(placedIds.length).toBeGreaterThanOrEqual(14);
        expect(outcomes.every((o) => o.availableMicros >= 0)).toBe(true);
        const rows = await store.listUsage({ accountId: a.id });
        expect(rows).toHaveLength(placedIds.length * 2);
        const charged = rows.reduce((sum, r) => sum + r.costMicros, 0);
        const account = (await store.getAccount(a.id))!;
        expect(account.balanceMicros).toBe(10_000 - charged);
        expect(account.balanceMicros).toBeGreaterThanOrEqual(0);
        expect(await store.availableMicros(a.id, now)).toBe(account.balanceMicros);
      });

      it('concurrent holds alone never take more than the balance', async () => {
        const other = await harness.openAnother();
        const a = await store.createAccount('race', 5_000);
        const now = Date.now();
        const outcomes = await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            (i % 2 ? other : store).placeHold({ id: `hold_only_${i}`, accountId: a.id, requestId: `r${i}`, amountMicros: 300, expiresAt: now + 60_000 }, now),
          ),
        );
        expect(outcomes.filter((o) => o.placed)).toHaveLength(16);
        expect(await store.availableMicros(a.id, now)).toBe(5_000 - 16 * 300);
      });
    });

    describe('rate-limit overrides', () => {
      it('sets fields one by one, keeps the others, goes back to defaults with null, and clears', async () => {
        const account = await store.createAccount('l', 1);
        const key = await store.createKey(account.id, 'c'.repeat(64), 'l');
        expect(await store.getRateLimits(account.id)).toEqual(none);
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
        expect(await store.getRateLimits(account.id)).toEqual(none);
      });
    });

    describe('secrets, webhooks and calls', () => {
      it('a client secret is consumed once; expired ones are pruned at the next mint', async () => {
        const account = await store.createAccount('s', 700);
        const key = await store.createKey(account.id, 'c'.repeat(64), 's');
        const now = Date.now();
        const secret = { accountId: account.id, keyId: key.id, shape: 'ga' as const, session: { type: 'transcription', nested: { a: [1, 2] } } };
        await store.createClientSecret({ ...secret, secretHash: 'old', expiresAt: now - 1 }, now - 10_000);
        await store.createClientSecret({ ...secret, secretHash: 'new', expiresAt: now + 60_000 }, now);
        expect(await store.consumeClientSecret('old')).toBeUndefined();
        const other = await harness.openAnother();
        const both = await Promise.all([store.consumeClientSecret('new'), other.consumeClientSecret('new')]);
        expect(both.filter(Boolean)).toEqual([{ ...secret, secretHash: 'new', expiresAt: now + 60_000 }]);
      });

      it('a server secret is made once, whoever asks first; webhooks are set, replaced and removed', async () => {
        const other = await harness.openAnother();
        const [x, y] = await Promise.all([store.serverSecret('telephony-token', () => 'first'), other.serverSecret('telephony-token', () => 'second')]);
        expect(x).toBe(y);
        expect(await store.serverSecret('telephony-token', () => 'third')).toBe(x);
        const account = await store.createAccount('w', 1);
        await store.setWebhook(account.id, { url: 'https://example.com/a', secret: 'whsec_a' });
        await store.setWebhook(account.id, { url: 'https://example.com/hooks', secret: 'whsec_x' });
        expect(await store.getWebhook(account.id)).toEqual({
          accountId: account.id,
          url: 'https://example.com/hooks',
          secret: 'whsec_x',
          updatedAt: expect.stringMatching(/Z$/),
        });
        await store.setWebhook(account.id, null);
        expect(await store.getWebhook(account.id)).toBeUndefined();
      });

      it('keeps call records, by start time, per account, the latest N', async () => {
        const account = await store.createAccount('c', 1);
        const call = (i: number) => ({
          id: `call_${i}`,
          accountId: account.id,
          keyId: 'key_1',
          carrier: 'twilio',
          mode: 'relay',
          carrierCallId: i ? `CA${i}` : null,
          startedAt: `2026-01-0${i + 1}T00:00:00.000Z`,
          endedAt: `2026-01-0${i + 1}T00:01:00.000Z`,
          durationMs: 60_000,
          turns: 3,
          callerSeconds: 7.5,
          charactersSynthesized: 40,
          charactersTranslated: 0,
          costMicros: 2 ** 40,
          endReason: 'caller_hangup',
        });
        for (const i of [2, 0, 1]) await store.recordCall(call(i));
        expect(await store.listCalls({ accountId: account.id })).toEqual([call(0), call(1), call(2)]);
        expect(await store.listCalls({ latest: 2 })).toEqual([call(1), call(2)]);
        expect(await store.listCalls({ accountId: 'acct_other' })).toEqual([]);
      });
    });

    describe('admin', () => {
      it('admin keys are found by hash while active; revoked ones are not found, still listed and counted', async () => {
        expect(await store.countAdminKeys()).toBe(0);
        const a = await store.createAdminKey('a'.repeat(64), 'ops');
        const b = await store.createAdminKey('b'.repeat(64), 'console');
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
        await expect(store.createAdminKey('b'.repeat(64), 'dup')).rejects.toThrow(/unique/i);
      });

      it('the audit trail keeps entries with their detail, lists the latest first, at most `limit`', async () => {
        const entries = [];
        for (let i = 0; i < 5; i++) {
          entries.push(
            await store.recordAdminAudit({
              adminKeyId: 'adm_1',
              action: 'account.credit',
              target: `acct_${i}`,
              detail: { amount_micros: i, nested: { ok: true } },
              requestId: `req_${i}`,
            }),
          );
        }
        expect(entries[0]!.id).toMatch(/^aud_[0-9a-f]{16}$/);
        const latest = await store.listAdminAudit(3);
        expect(latest.map((e) => e.target)).toEqual(['acct_4', 'acct_3', 'acct_2']);
        expect(latest[0]).toEqual(entries[4]);
        expect(await store.listAdminAudit(1000)).toHaveLength(5);
      });

      it('daily usage sums each UTC day: distinct requests, cost, and units apart; since the given day only', async () => {
        const record = (accountId: string, o: Partial<NewUsageRecord>) =>
          usage(accountId, { keyId: 'key_1', model: 'sunjata-1', quantity: 1, unitPriceMicros: 100, costMicros: 100, ...o });
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
        await harness.backdateUsage('r1', '2026-03-01T23:59:59.999Z');
        await harness.backdateUsage('r2', '2026-03-01T00:00:00.000Z');
        await harness.backdateUsage('r3', '2026-03-03T10:00:00.000Z');
        await harness.backdateUsage('r4', '2026-03-03T11:00:00.000Z');
        await harness.backdateUsage('r5', '2026-02-28T23:59:59.999Z');
        await harness.backdateUsage('r6', '2026-03-01T12:00:00.000Z');
        expect(await store.dailyUsage(account.id, '2026-03-01')).toEqual([
          { date: '2026-03-01', requests: 2, costMicros: 1670, seconds: 1.5, characters: 40, tokens: 12 },
          { date: '2026-03-03', requests: 2, costMicros: 275, seconds: 2, characters: 5, tokens: 0 },
        ]);
        expect(await store.dailyUsage(account.id, '2026-03-04')).toEqual([]);
        expect(await store.dailyUsage('acct_none', '2026-01-01')).toEqual([]);
      });
    });
  });
}
