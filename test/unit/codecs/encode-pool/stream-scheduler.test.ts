/**
 * The encoder worker's request order (stream-scheduler.ts): streams that have delivered nothing first;
 * within a class accounts take turns, then an account's streams; a stream's requests keep their order —
 * checked over random enqueue/next sequences, and on the case that made it per account: one account with
 * many busy streams, another with one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StreamScheduler, type ScheduledStream } from '../../../../src/codecs/encode-pool/stream-scheduler.js';

interface Stream extends ScheduledStream<number> {
  name: string;
}

const stream = (name: string, account: string, started = true): Stream => ({ name, account, pending: [], started, queued: false });

describe('StreamScheduler', () => {
  it('one account with many streams and another with one: the other gets every other turn', () => {
    const scheduler = new StreamScheduler<Stream, number>();
    const busy = Array.from({ length: 16 }, (_, i) => stream(`A${i}`, 'a'));
    for (const s of busy) for (let r = 0; r < 4; r++) scheduler.enqueue(s, r);
    const light = stream('B', 'b');
    for (let r = 0; r < 3; r++) scheduler.enqueue(light, r);
    const order = Array.from({ length: 8 }, () => scheduler.next()!.stream.name);
    expect(order).toEqual(['A0', 'B', 'A1', 'B', 'A2', 'B', 'A3', 'A4']);
  });

  it('serves streams that have not started first, accounts in turn, and each stream in order', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ stream: fc.nat({ max: 7 }), next: fc.boolean() }), { maxLength: 300 }), (ops) => {
        const scheduler = new StreamScheduler<Stream, number>();
        const streams = Array.from({ length: 8 }, (_, i) => stream(`s${i}`, `acct${i % 3}`, i % 2 === 0));
        const sent = new Map<Stream, number>();
        const enqueued = new Map<Stream, number>();
        // Per class and waiting account X: how often each other account was served while X waited.
        const servedWhileWaiting = new Map<string, Map<string, number>>();
        for (const op of ops) {
          if (!op.next) {
            const s = streams[op.stream]!;
            const n = enqueued.get(s) ?? 0;
            scheduler.enqueue(s, n);
            enqueued.set(s, n + 1);
            continue;
          }
          const waiting = streams.filter((s) => s.pending.length > 0);
          const got = scheduler.next();
          if (!got) {
            expect(waiting).toHaveLength(0);
            continue;
          }
          // Requests of a stream in order.
          expect(got.request).toBe(sent.get(got.stream) ?? 0);
          sent.set(got.stream, got.request + 1);
          // A started stream only when no unstarted one waits.
          if (got.stream.started) expect(waiting.some((s) => !s.started)).toBe(false);
          // Within the class, while an account waits, every other account is served at most once.
          const key = (account: string) => `${got.stream.started}/${account}`;
          const waitingAccounts = new Set(waiting.filter((s) => s.started === got.stream.started).map((s) => s.account!));
          for (const k of [...servedWhileWaiting.keys()])
            if (k.startsWith(`${got.stream.started}/`) && !waitingAccounts.has(k.slice(k.indexOf('/') + 1))) servedWhileWaiting.delete(k);
          for (const account of waitingAccounts) {
            if (account === got.stream.account) continue;
            const counts = servedWhileWaiting.get(key(account)) ?? new Map<string, number>();
            counts.set(got.stream.account!, (counts.get(got.stream.account!) ?? 0) + 1);
            expect(counts.get(got.stream.account!)).toBeLessThanOrEqual(1);
            servedWhileWaiting.set(key(account), counts);
          }
          servedWhileWaiting.delete(key(got.stream.account!));
        }
      }),
      { numRuns: 200 },
    );
  });
});
