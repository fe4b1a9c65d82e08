import { describe, expect, it } from 'vitest';
import { BodyQueue } from '../../../src/transport/body-queue.js';

const ab = (bytes: number[]) => new Uint8Array(bytes).buffer;

describe('BodyQueue', () => {
  it('copies chunks, so a reused uWS buffer cannot change what was queued', async () => {
    const q = new BodyQueue(
      () => {},
      () => {},
    );
    const shared = new Uint8Array([1, 2, 3]);
    q.push(shared.buffer, false);
    shared.fill(9);
    q.push(ab([4]), true);
    const got: number[] = [];
    for await (const c of q) got.push(...c);
    expect(got).toEqual([1, 2, 3, 4]);
  });

  it('pauses the socket above the high-water mark and resumes once half is drained', async () => {
    const events: string[] = [];
    const q = new BodyQueue(
      () => events.push('pause'),
      () => events.push('resume'),
      10,
    );
    for (let i = 0; i < 4; i++) q.push(ab([1, 2, 3, 4]), false);
    expect(events).toEqual(['pause']);
    const it = q[Symbol.asyncIterator]();
    await it.next();
    expect(events).toEqual(['pause']); // 12 bytes left > 5
    await it.next();
    await it.next();
    expect(events).toEqual(['pause', 'resume']);
  });

  it('never pauses for the last chunk: nothing more is coming to hold back', () => {
    const events: string[] = [];
    const q = new BodyQueue(
      () => events.push('pause'),
      () => events.push('resume'),
      10,
    );
    q.push(ab([1, 2, 3, 4, 5, 6]), false);
    q.push(ab([7, 8, 9, 10, 11, 12]), true);
    expect(events).toEqual([]);
    expect(q.complete).toBe(true);
  });

  it('says whether the body had ended when it resumes the socket', async () => {
    const resumes: boolean[] = [];
    const q = new BodyQueue(
      () => {},
      (bodyEnded) => resumes.push(bodyEnded),
      4,
    );
    q.push(ab([1, 2, 3, 4, 5]), false); // paused mid-body
    q.push(ab([6]), true); // the end arrives in the same read, while paused
    const it = q[Symbol.asyncIterator]();
    await it.next();
    expect(resumes).toEqual([true]);

    const midBody: boolean[] = [];
    const r = new BodyQueue(
      () => {},
      (bodyEnded) => midBody.push(bodyEnded),
      4,
    );
    r.push(ab([1, 2, 3, 4, 5]), false);
    await r[Symbol.asyncIterator]().next();
    expect(midBody).toEqual([false]);
  });

  it('rejects a pending read when the client disconnects', async () => {
    const q = new BodyQueue(
      () => {},
      () => {},
    );
    const reading = (async () => {
      for await (const _ of q) void _;
    })();
    q.fail(new Error('client disconnected'));
    await expect(reading).rejects.toThrow('client disconnected');
  });

  it('can be read only once', async () => {
    const q = new BodyQueue(
      () => {},
      () => {},
    );
    q.end();
    for await (const _ of q) void _;
    await expect(
      (async () => {
        for await (const _ of q) void _;
      })(),
    ).rejects.toThrow(/only once/);
  });

  it('discard drops queued bytes and resumes a paused socket', () => {
    const events: string[] = [];
    const q = new BodyQueue(
      () => events.push('pause'),
      () => events.push('resume'),
      2,
    );
    q.push(ab([1, 2, 3]), false);
    q.discard();
    q.push(ab([4, 5, 6]), true);
    expect(events).toEqual(['pause', 'resume']);
    expect(q.complete).toBe(true);
  });

  it('drainRest resolves true once the rest of the body has arrived, dropping it', async () => {
    const q = new BodyQueue(
      () => {},
      () => {},
    );
    q.push(ab([1, 2]), false);
    const drained = q.drainRest(100, 5_000);
    q.push(ab([3, 4, 5]), false);
    q.push(ab([6]), true);
    expect(await drained).toBe(true);
  });

  it('drainRest gives up past its byte limit, after its timeout, or when the client leaves', async () => {
    const overLimit = new BodyQueue(
      () => {},
      () => {},
    );
    const a = overLimit.drainRest(4, 5_000);
    overLimit.push(ab([1, 2, 3]), false);
    overLimit.push(ab([4, 5]), false);
    expect(await a).toBe(false);

    const slow = new BodyQueue(
      () => {},
      () => {},
    );
    expect(await slow.drainRest(100, 20)).toBe(false);

    const gone = new BodyQueue(
      () => {},
      () => {},
    );
    const c = gone.drainRest(100, 5_000);
    gone.fail(new Error('client disconnected'));
    expect(await c).toBe(false);

    const done = new BodyQueue(
      () => {},
      () => {},
    );
    done.end();
    expect(await done.drainRest(0, 5_000)).toBe(true);
  });
});
