import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { AsyncQueue } from '../../../src/primitives/async-queue.js';

/** A step of a producer and a consumer interleaved: push the next item, start a pull, or let pending pulls run. */
const step = fc.constantFrom('push', 'pull', 'tick');
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('AsyncQueue', () => {
  it('delivers every item once, in push order, for any interleaving of pushes and pulls', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
        const q = new AsyncQueue<number>();
        const pulls: Promise<IteratorResult<number>>[] = [];
        let pushed = 0;
        for (const s of steps) {
          if (s === 'push') q.push(pushed++);
          else if (s === 'pull') pulls.push(q.next());
          else await tick();
        }
        q.end();
        // Pull until done: the pending pulls take the first items, these the rest.
        for (;;) {
          const r = q.next();
          pulls.push(r);
          if ((await r).done) break;
        }
        const results = await Promise.all(pulls);
        const values = results.filter((r) => !r.done).map((r) => r.value);
        expect(values).toEqual(Array.from({ length: pushed }, (_, i) => i));
        // Once done, done: every pull after the last item.
        expect(results.slice(pushed).every((r) => r.done)).toBe(true);
      }),
    );
  });

  it('keeps order when the producer pushes from its resume callback while several pulls wait', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 4 }), async (total, highWater, together) => {
        let produced = 0;
        // A producer driven by the queue alone: it pushes until told to pause, and again when resumed.
        const produce = () => {
          while (produced < total && q.push(produced++, { last: produced === total }));
        };
        const q: AsyncQueue<number> = new AsyncQueue<number>({ highWater, onResume: produce });
        const got: number[] = [];
        for (let done = false; !done;) {
          const pulls = Array.from({ length: together }, () => q.next());
          if (got.length === 0) produce();
          for (const r of await Promise.all(pulls)) {
            if (r.done) done = true;
            else got.push(r.value);
          }
        }
        expect(got).toEqual(Array.from({ length: total }, (_, i) => i));
      }),
    );
  });

  it('keeps bytes whole across any chunking and interleaving, under backpressure', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 30 }),
        fc.array(step, { maxLength: 60 }),
        fc.integer({ min: 0, max: 64 }),
        async (chunks, steps, highWater) => {
          let pauses = 0;
          let resumes = 0;
          const q = new AsyncQueue<Uint8Array>({ sizeOf: (c) => c.byteLength, highWater, onPause: () => pauses++, onResume: () => resumes++ });
          const got: Uint8Array[] = [];
          const reading = (async () => {
            for await (const c of q) got.push(c);
          })();
          let i = 0;
          for (const s of steps) {
            if (s === 'push' && i < chunks.length) q.push(chunks[i]!, { last: i++ === chunks.length - 1 });
            else await tick();
          }
          while (i < chunks.length) q.push(chunks[i]!, { last: i++ === chunks.length - 1 });
          q.end(); // for no chunks at all; a second end changes nothing
          await reading;
          expect(Buffer.concat(got)).toEqual(Buffer.concat(chunks));
          expect(got.length).toBe(chunks.length);
          expect(pauses).toBe(resumes); // every pause was released: everything was taken
        },
      ),
    );
  });

  it('signals pause exactly when the queued size goes above high water, and resume once a take brings it to the low mark', () => {
    type Op = { push: number; last?: boolean } | 'take';
    const op: fc.Arbitrary<Op> = fc.oneof(fc.record({ push: fc.integer({ min: 0, max: 20 }) }), fc.constant('take' as const));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 50 }), fc.boolean(), (ops, a, b, endLast) => {
        const [lowWater, highWater] = a <= b ? [a, b] : [b, a];
        const events: string[] = [];
        const q = new AsyncQueue<number>({
          sizeOf: (n) => n,
          highWater,
          lowWater,
          onPause: () => events.push('pause'),
          onResume: (ended) => events.push(`resume:${ended}`),
        });
        // The model: the queued sizes, pulls waiting for an item, whether the producer is paused and has ended.
        const model: number[] = [];
        let waiting = 0;
        let paused = false;
        let ended = false;
        const expected: string[] = [];
        const queued = () => model.reduce((s, n) => s + n, 0);
        const take = () => {
          model.shift();
          if (paused && queued() <= lowWater) {
            paused = false;
            expected.push(`resume:${ended}`);
          }
        };
        const all = endLast ? [...ops, { push: 5, last: true }, ...ops.filter((o) => o === 'take'), 'take' as const] : ops;
        for (const o of all) {
          if (o === 'take') {
            void q.next(); // takes a queued item at once, or waits for the next push
            if (model.length > 0) take();
            else if (!ended) waiting++;
          } else if (!ended) {
            const goOn = q.push(o.push, { last: o.last });
            model.push(o.push);
            if (o.last) ended = true;
            // The item counts toward the mark before a waiting pull takes it.
            if (!paused && !o.last && queued() > highWater) {
              paused = true;
              expected.push('pause');
            }
            if (waiting > 0) {
              waiting--;
              take();
            }
            expect(goOn).toBe(!paused && !ended); // what the producer is told once push() returns
          }
          expect(events).toEqual(expected);
          expect(q.paused).toBe(paused);
          expect(q.size).toBe(queued());
        }
      }),
    );
  });

  it('drained() resolves when the producer is resumed, and at once when it is not paused', async () => {
    const q = new AsyncQueue<number>({ highWater: 2, lowWater: 1 });
    await q.drained();
    q.push(1);
    q.push(2);
    expect(q.push(3)).toBe(false);
    let drained = false;
    const waiting = q.drained().then(() => (drained = true));
    await q.next(); // 2 queued
    await tick();
    expect(drained).toBe(false);
    await q.next(); // 1 queued: at the low mark
    await waiting;
    expect(q.paused).toBe(false);
  });

  it('end() after any pushes yields every item, then done, and done again', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer()), async (items) => {
        const q = new AsyncQueue<number>();
        for (const n of items) q.push(n);
        q.end();
        const got: number[] = [];
        for await (const n of q) got.push(n);
        expect(got).toEqual(items);
        expect((await q.next()).done).toBe(true);
        expect(q.push(1)).toBe(false); // after the end nothing is queued
        expect(q.length).toBe(0);
      }),
    );
  });

  it('end(error) yields the queued items first, then rejects with the error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer()), async (items) => {
        const q = new AsyncQueue<number>();
        for (const n of items) q.push(n);
        const error = new Error('decode failed');
        q.end(error);
        const got: number[] = [];
        await expect(
          (async () => {
            for await (const n of q) got.push(n);
          })(),
        ).rejects.toBe(error);
        expect(got).toEqual(items);
      }),
    );
  });

  it('fail(error) drops what is queued and rejects pending and later pulls with the error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer(), { maxLength: 10 }), fc.integer({ min: 0, max: 3 }), async (items, waiting) => {
        const q = new AsyncQueue<number>();
        // Either pulls wait on an empty queue, or items wait for a pull.
        const pending = Array.from({ length: waiting }, () => q.next());
        pending.forEach((p) => p.catch(() => {}));
        if (waiting === 0) for (const n of items) q.push(n);
        const error = new Error('client disconnected');
        q.fail(error);
        q.fail(new Error('a second failure'));
        expect(q.push(1)).toBe(false);
        q.end();
        expect(q.length).toBe(0);
        for (const p of pending) await expect(p).rejects.toBe(error);
        await expect(q.next()).rejects.toBe(error);
        await expect(q.next()).rejects.toBe(error);
      }),
    );
  });

  it('fail(error) leaves a paused producer paused (it is gone); a later cancel() releases it, without telling it to stop', () => {
    const events: string[] = [];
    const q = new AsyncQueue<number>({
      highWater: 1,
      onPause: () => events.push('pause'),
      onResume: (ended) => events.push(`resume:${ended}`),
      onCancel: () => events.push('cancel'),
    });
    q.push(1);
    q.push(2);
    q.fail(new Error('client disconnected'));
    expect(events).toEqual(['pause']);
    expect(q.paused).toBe(true);
    q.cancel();
    expect(events).toEqual(['pause', 'resume:false']);
  });

  it('a consumer that breaks cancels the producer once, resuming it first if paused, and later pushes are dropped', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 20 }), fc.nat(), fc.integer({ min: 0, max: 10 }), async (pushes, r, highWater) => {
        const events: string[] = [];
        const q = new AsyncQueue<number>({
          highWater,
          onPause: () => events.push('pause'),
          onResume: () => events.push('resume'),
          onCancel: () => events.push('cancel'),
        });
        for (let i = 0; i < pushes; i++) q.push(i);
        const readBefore = r % pushes; // break with 0 or more items still queued, the producer not ended
        let read = 0;
        for await (const _ of q) {
          if (read++ >= readBefore) break;
        }
        // One cancel, last: a pause was released before it.
        expect(events.filter((e) => e === 'cancel')).toHaveLength(1);
        expect(events.at(-1)).toBe('cancel');
        expect(events.filter((e) => e === 'pause')).toHaveLength(events.filter((e) => e === 'resume').length);
        expect(q.paused).toBe(false);
        expect(q.length).toBe(0);
        expect(q.push(99)).toBe(false);
        expect(q.length).toBe(0);
        expect((await q.next()).done).toBe(true);
      }),
    );
  });

  it('does not cancel a producer that already ended, and cancel(reason) makes later pulls reject', async () => {
    let cancels = 0;
    const ended = new AsyncQueue<number>({ onCancel: () => cancels++ });
    ended.push(1, { last: true });
    for await (const _ of ended) break;
    expect(cancels).toBe(0);

    const aborted = new AsyncQueue<number>({ onCancel: () => cancels++ });
    const pending = aborted.next();
    const reason = new Error('aborted');
    aborted.cancel(reason);
    await expect(pending).rejects.toBe(reason);
    await expect(aborted.next()).rejects.toBe(reason);
    expect(cancels).toBe(1);
  });

  it('calls onTake for each item taken, and can be read only once', async () => {
    const taken: number[] = [];
    const q = new AsyncQueue<number>({ label: 'The test stream', onTake: (n) => taken.push(n) });
    q.push(1);
    q.push(2, { last: true });
    for await (const _ of q) void _;
    expect(taken).toEqual([1, 2]);
    expect(() => q[Symbol.asyncIterator]()).toThrow('The test stream can be read only once');
  });
});
