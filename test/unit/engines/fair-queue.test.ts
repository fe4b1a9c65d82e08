/**
 * The wait queue's order (fair-queue.ts), as properties over random arrivals and services: openings before
 * continuations except for the turn owed to another account's continuation, each account's jobs in arrival order, an account's first job waits behind at most one job
 * of each other account, and a light account's later jobs behind at most two of each other account's.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FairQueue, type JobPriority } from '../../../src/engines/runtime/fair-queue.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 300);

interface Job {
  id: number;
  account: string;
  priority: JobPriority;
}

type Op = { kind: 'push'; account: string; priority: JobPriority } | { kind: 'shift' } | { kind: 'remove'; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('push' as const),
    account: fc.constantFrom('a', 'b', 'c', 'd'),
    priority: fc.constantFrom<JobPriority>('opening', 'continuation'),
  }),
  fc.constant({ kind: 'shift' as const }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
);

/** Runs the ops, returning what was served in order and, per job, the services that happened while it waited. */
function simulate(ops: Op[]) {
  const queue = new FairQueue<Job>();
  const waiting: Job[] = [];
  const servedWhileWaiting = new Map<number, Job[]>();
  const served: Array<{ job: Job; waitingAtService: Job[] }> = [];
  let nextId = 0;
  for (const op of ops) {
    if (op.kind === 'push') {
      const job = { id: nextId++, account: op.account, priority: op.priority };
      queue.push(job, job);
      waiting.push(job);
      servedWhileWaiting.set(job.id, []);
    } else if (op.kind === 'remove') {
      if (!waiting.length) continue;
      const job = waiting[op.pick % waiting.length]!;
      expect(queue.remove(job)).toBe(true);
      waiting.splice(waiting.indexOf(job), 1);
    } else {
      const job = queue.shift();
      if (!job) {
        expect(waiting).toHaveLength(0);
        continue;
      }
      const index = waiting.indexOf(job);
      expect(index).toBeGreaterThanOrEqual(0);
      served.push({ job, waitingAtService: [...waiting] });
      waiting.splice(index, 1);
      for (const other of waiting) servedWhileWaiting.get(other.id)!.push(job);
    }
    expect(queue.length).toBe(waiting.length);
    expect(queue.openings).toBe(waiting.filter((j) => j.priority === 'opening').length);
  }
  return { served, servedWhileWaiting };
}

describe('FairQueue', () => {
  it("serves openings before continuations — but after an opening passed another account's continuation, a continuation — and each account in arrival order within a class", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 200 }), (ops) => {
        const { served } = simulate(ops);
        served.forEach(({ job, waitingAtService }, i) => {
          if (job.priority === 'continuation' && waitingAtService.some((j) => j.priority === 'opening')) {
            // Only the turn owed to continuations: the job served just before was an opening that passed
            // a waiting continuation of another account.
            const previous = served[i - 1];
            expect(previous?.job.priority).toBe('opening');
            expect(previous!.waitingAtService.some((j) => j.priority === 'continuation' && j.account !== previous!.job.account)).toBe(true);
          }
          // No earlier job of the same account and class was still waiting.
          expect(waitingAtService.some((j) => j.account === job.account && j.priority === job.priority && j.id < job.id)).toBe(false);
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('a waiting continuation is passed by at most one opening of another account in a row', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 200 }), (ops) => {
        const { served } = simulate(ops);
        let run = 0; // openings served in a row that passed another account's waiting continuation
        for (const { job, waitingAtService } of served) {
          if (job.priority === 'continuation') run = 0;
          else if (waitingAtService.some((j) => j.priority === 'continuation' && j.account !== job.account)) run++;
          expect(run).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("one account's openings all go before its own continuations", () => {
    const queue = new FairQueue<number>();
    for (let i = 0; i < 4; i++) queue.push(i, { account: 'a', priority: 'continuation' });
    for (let i = 10; i < 14; i++) queue.push(i, { account: 'a', priority: 'opening' });
    expect(Array.from({ length: 8 }, () => queue.shift())).toEqual([10, 11, 12, 13, 0, 1, 2, 3]);
  });

  it("a flooding account's openings and another account's continuation take turns", () => {
    const queue = new FairQueue<string>();
    for (let i = 0; i < 6; i++) queue.push(`A${i}`, { account: 'a', priority: 'opening' });
    queue.push('B-next-phrase', { account: 'b', priority: 'continuation' });
    expect(Array.from({ length: 3 }, () => queue.shift())).toEqual(['A0', 'B-next-phrase', 'A1']);
  });

  it("one account's backlog delays another's first job by at most one job of each account", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 200 }), (ops) => {
        const { served, servedWhileWaiting } = simulate(ops);
        const seen = new Set<string>();
        for (const { job } of served) {
          const key = `${job.account}/${job.priority}`;
          const first = !seen.has(key);
          seen.add(key);
          // Services of the same class by other accounts while this job waited, per account.
          const perAccount = new Map<string, number>();
          for (const other of servedWhileWaiting.get(job.id)!) {
            if (other.priority !== job.priority || other.account === job.account) continue;
            perAccount.set(other.account, (perAccount.get(other.account) ?? 0) + 1);
          }
          const most = Math.max(0, ...perAccount.values());
          if (first && isFirstArrival(ops, job)) expect(most).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('a light account (one job at a time) waits behind at most two jobs of any flooding account', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), fc.array(fc.nat({ max: 5 }), { minLength: 1, maxLength: 20 }), (flood, gaps) => {
        const queue = new FairQueue<Job>();
        let id = 0;
        for (let i = 0; i < flood; i++) queue.push({ id: id++, account: 'heavy', priority: 'opening' }, { account: 'heavy', priority: 'opening' });
        for (const gap of gaps) {
          // The heavy account keeps its backlog topped up while the light one is served `gap` times apart.
          for (let i = 0; i < gap; i++) {
            const job = queue.shift();
            if (job) queue.push({ id: id++, account: 'heavy', priority: 'opening' }, { account: 'heavy', priority: 'opening' });
          }
          const light = { id: id++, account: 'light', priority: 'opening' as const };
          queue.push(light, light);
          let heavyBefore = 0;
          for (let job = queue.shift(); job !== light; job = queue.shift()) {
            expect(job).toBeDefined();
            heavyBefore++;
            queue.push({ id: id++, account: 'heavy', priority: 'opening' }, { account: 'heavy', priority: 'opening' });
          }
          expect(heavyBefore).toBeLessThanOrEqual(2);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('a flooding account and a newcomer alternate once both are waiting', () => {
    const queue = new FairQueue<Job>();
    for (let i = 0; i < 10; i++) queue.push({ id: i, account: 'a', priority: 'opening' }, { account: 'a', priority: 'opening' });
    expect(queue.shift()!.id).toBe(0);
    for (let i = 0; i < 3; i++) queue.push({ id: 100 + i, account: 'b', priority: 'opening' }, { account: 'b', priority: 'opening' });
    const order = Array.from({ length: 8 }, () => queue.shift()!.id);
    expect(order).toEqual([100, 1, 101, 2, 102, 3, 4, 5]);
  });

  it('drain empties both classes in arrival order', () => {
    const queue = new FairQueue<number>();
    queue.push(1, { account: 'a', priority: 'continuation' });
    queue.push(2, { account: 'b', priority: 'opening' });
    queue.push(3, { account: 'a', priority: 'opening' });
    expect(queue.drain()).toEqual([2, 3, 1]);
    expect(queue.length).toBe(0);
    expect(queue.shift()).toBeUndefined();
  });
});

/** Whether `job` is the first push ever of its account in its class (the queue has no history of it). */
function isFirstArrival(ops: Op[], job: Job): boolean {
  let id = 0;
  for (const op of ops) {
    if (op.kind !== 'push') continue;
    if (op.account === job.account && op.priority === job.priority) return id === job.id;
    id++;
  }
  return false;
}
