/**
 * A realtime item is charged only once its `completed` event has left the process (the session's
 * `delivered`, which the WebSocket adapter answers from the transport's flush): not before the event is
 * emitted, not while it waits in a buffer, not at all when the client is gone first. A store that fails
 * after delivery is logged and charges nothing; the client keeps its transcript (no `failed`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../../src/billing/ledger.js';
import { PriceTableSchema } from '../../../src/config/prices.js';
import { deliverItem, type CommittedItem, type DeliveryContext } from '../../../src/realtime/item-delivery.js';
import type { RealtimeSessionDeps } from '../../../src/realtime/realtime-session.js';
import type { SessionOutput } from '../../../src/realtime/session-events.js';
import type { TurnTranscriber } from '../../../src/realtime/turn-transcriber.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Account, Store } from '../../../src/store/store.js';

let dir: string;
let store: Store;
let ledger: Ledger;
let account: Account;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-item-delivery-'));
  store = await openSqliteStore(path.join(dir, 'kuma.sqlite'));
  ledger = new Ledger(store, PriceTableSchema.parse({}));
  account = await store.createAccount('items', 1_000_000);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Items whose recogniser was let go (cancel), by transcript. */
let letGo: string[] = [];
beforeEach(() => {
  letGo = [];
});

/** A committed item of `seconds` of audio whose transcript is `text` (the transcriber's final decode). */
function item(seconds: number, text: string, extra: Partial<CommittedItem> = {}): CommittedItem {
  const transcriber = { final: async () => text, cancel: () => letGo.push(text) } as unknown as TurnTranscriber;
  return {
    itemId: 'item_1',
    samples: new Float32Array(seconds * 16_000),
    transcriber,
    model: { id: 'sunjata-1', engine: null as never },
    target: null,
    committedAt: performance.now(),
    ...extra,
  };
}

function context(delivered: () => Promise<boolean>, logged: string[] = [], more: Partial<RealtimeSessionDeps> = {}) {
  const outputs: SessionOutput[] = [];
  const deps = {
    ledger,
    charge: { requestId: 'req_rt', accountId: account.id, keyId: 'key_0123456789ab' },
    vad: null,
    translator: null,
    maxBufferSeconds: 60,
    delivered,
    logger: { error: (_o: unknown, message: string) => logged.push(message) },
    ...more,
  } as unknown as RealtimeSessionDeps;
  const ctx: DeliveryContext = { deps, signal: new AbortController().signal, emit: (o) => outputs.push(o), fatal: () => {} };
  return { ctx, outputs };
}

describe('deliverItem charges only what left the process', () => {
  it('the charge waits for the completed event to be flushed: nothing is recorded before, the seconds after', async () => {
    let flush!: (ok: boolean) => void;
    const { ctx, outputs } = context(() => new Promise((resolve) => (flush = resolve)));
    const done = deliverItem(ctx, item(2, 'i ni ce'));
    for (let i = 0; i < 50 && !outputs.some((o) => o.type === 'completed'); i++) await new Promise((r) => setTimeout(r, 5));
    expect(outputs.map((o) => o.type)).toEqual(['completed']);
    // Emitted, not yet written to the network: a crash now must leave no row.
    await new Promise((r) => setTimeout(r, 20));
    expect(await store.listUsage({ accountId: account.id })).toEqual([]);
    flush(true);
    await done;
    expect((await store.listUsage({ accountId: account.id })).map((r) => [r.unit, r.quantity])).toEqual([['second', 2]]);
    expect(ledger.openReservations).toBe(0);
  });

  it("lets go of the item's recogniser once the item is over, whether its final ran or its hold failed", async () => {
    const { ctx } = context(async () => true);
    await deliverItem(ctx, item(2, 'i ni ce'));
    const poor = await store.createAccount('poor', 0);
    const refused = context(async () => true, [], { charge: { requestId: 'req_rt', accountId: poor.id, keyId: 'key_0123456789ab' } });
    let fatal = '';
    refused.ctx.fatal = (code: string) => void (fatal = code);
    await deliverItem(refused.ctx, item(2, 'a ni sogoma'));
    expect(fatal).toBe('insufficient_quota');
    expect(letGo).toEqual(['i ni ce', 'a ni sogoma']);
  });

  it('a client gone before the event left the process: released, nothing charged', async () => {
    const { ctx, outputs } = context(async () => false);
    await deliverItem(ctx, item(2, 'i ni ce'));
    expect(outputs.map((o) => o.type)).toEqual(['completed']);
    expect(await store.listUsage({ accountId: account.id })).toEqual([]);
    expect(ledger.openReservations).toBe(0);
    expect((await store.getAccount(account.id))!.balanceMicros).toBe(1_000_000);
  });

  it('a store failure after delivery: logged as delivered, not charged; no failed event for a delivered transcript', async () => {
    const logged: string[] = [];
    const { ctx, outputs } = context(async () => {
      store.recordUsage = async () => {
        throw new Error('disk full');
      };
      return true;
    }, logged);
    await deliverItem(ctx, item(1, 'a ni sogoma'));
    expect(outputs.map((o) => o.type)).toEqual(['completed']);
    expect(logged).toEqual([expect.stringMatching(/delivered, not charged/)]);
    expect(ledger.openReservations).toBe(0);
  });

  it('an idle-timeout item with an empty transcript is free; one with words is charged', async () => {
    const { ctx, outputs } = context(async () => true);
    await deliverItem(ctx, item(3, '', { idle: true }));
    await deliverItem(ctx, item(3, 'i ni ce', { idle: true, itemId: 'item_2' }));
    expect(outputs.map((o) => (o.type === 'completed' ? o.seconds : o.type))).toEqual([0, 3]);
    expect((await store.listUsage({ accountId: account.id })).map((r) => r.quantity)).toEqual([3]);
  });
});

describe('deliverItem within the item deadline', () => {
  /** A transcriber whose final decode waits in a queue until its signal aborts it (an overloaded model). */
  const stuck = {
    final: (_s: Float32Array, limits?: { signal: AbortSignal }) =>
      new Promise<string>((_, reject) => limits!.signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true })),
    cancel: () => undefined,
  } as unknown as TurnTranscriber;

  it('an item whose final is not ready by its deadline gets failed transcription_timeout, is cancelled and not charged', async () => {
    const failedCodes: string[] = [];
    const { ctx, outputs } = context(async () => true, [], {
      finalTimeoutMs: 50,
      observer: { turnDetected() {}, turnCompleted() {}, itemFailed: (code: string) => failedCodes.push(code) },
    });
    await deliverItem(ctx, item(2, '', { transcriber: stuck }));
    expect(outputs).toEqual([
      { type: 'failed', itemId: 'item_1', error: { code: 'transcription_timeout', message: expect.stringMatching(/did not finish within 0.05 s/) } },
    ]);
    expect(failedCodes).toEqual(['transcription_timeout']);
    expect(await store.listUsage({ accountId: account.id })).toEqual([]);
    expect(ledger.openReservations).toBe(0);
  });

  it('the deadline counts from the commit: an item that waited behind others past it fails at once', async () => {
    const { ctx, outputs } = context(async () => true, [], { finalTimeoutMs: 1000 });
    await deliverItem(ctx, item(1, '', { transcriber: stuck, committedAt: performance.now() - 5000 }));
    expect(outputs.map((o) => (o.type === 'failed' ? o.error.code : o.type))).toEqual(['transcription_timeout']);
  });
});
