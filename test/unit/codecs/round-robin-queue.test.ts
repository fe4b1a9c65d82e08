/**
 * RoundRobinQueue, the decoder pool's wait queue: for any sequence of arrivals, removals and services, items of
 * one account come out in the order they arrived, nothing is lost or duplicated, and an item that is the
 * m-th of its account in the queue when it arrives waits for at most m items of any other single account
 * (round-robin: one flooding account cannot push another's item behind its whole backlog).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RoundRobinQueue } from '../../../src/codecs/decode/round-robin-queue.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 200);

type Op = { kind: 'push'; account: number } | { kind: 'shift' } | { kind: 'remove'; pick: number };
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('push' as const), account: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 4, arbitrary: fc.constant({ kind: 'shift' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }) },
);

interface Item {
  account: string;
  seq: number;
  /** Items of its own account waiting when it arrived, itself included. */
  rank: number;
  /** Items of each other account served while it waited. */
  servedWhileWaiting: Map<string, number>;
}

describe('RoundRobinQueue', () => {
  it("serves accounts in turn: FIFO per account, nothing lost, and no account waits behind another's backlog", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const queue = new RoundRobinQueue<Item>();
        const waiting = new Set<Item>();
        const lastServed = new Map<string, number>();
        let seq = 0;
        for (const o of ops) {
          if (o.kind === 'push') {
            const account = `acct-${o.account}`;
            const rank = [...waiting].filter((w) => w.account === account).length + 1;
            const item: Item = { account, seq: seq++, rank, servedWhileWaiting: new Map() };
            queue.push(account, item);
            waiting.add(item);
          } else if (o.kind === 'remove') {
            const victim = [...waiting][o.pick % Math.max(1, waiting.size)];
            if (!victim) continue;
            expect(queue.remove(victim)).toBe(true);
            expect(queue.remove(victim)).toBe(false);
            waiting.delete(victim);
          } else {
            const item = queue.shift();
            if (!item) {
              expect(waiting.size).toBe(0);
              continue;
            }
            expect(waiting.has(item)).toBe(true);
            waiting.delete(item);
            expect(item.seq).toBeGreaterThan(lastServed.get(item.account) ?? -1); // FIFO within an account
            lastServed.set(item.account, item.seq);
            for (const [, n] of item.servedWhileWaiting) expect(n).toBeLessThanOrEqual(item.rank);
            for (const w of waiting) if (w.account !== item.account) w.servedWhileWaiting.set(item.account, (w.servedWhileWaiting.get(item.account) ?? 0) + 1);
          }
          expect(queue.size).toBe(waiting.size);
        }
        const rest = queue.drain();
        expect(new Set(rest)).toEqual(waiting);
        expect(queue.size).toBe(0);
        expect(queue.shift()).toBeUndefined();
      }),
      { numRuns: RUNS, seed: 16 },
    );
  });

  it("one account's 48 queued items make another account's one item wait for just one of them", () => {
    const queue = new RoundRobinQueue<string>();
    for (let i = 0; i < 48; i++) queue.push('A', `A${i}`);
    queue.push('B', 'B0');
    expect([queue.shift(), queue.shift(), queue.shift()]).toEqual(['A0', 'B0', 'A1']);
  });
});
