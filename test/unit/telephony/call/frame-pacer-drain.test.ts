/**
 * The paced stream's drain, which a call's voice awaits instead of polling: drained(n) resolves once at most
 * n frames wait to be sent, drained() once everything queued (markers included) has gone, and either at once
 * when the stream is cleared (barge-in) or closed. Checked on a fake clock, for any number of frames and any
 * bound (fast-check), by the frames sent when the promise settles — not by wall-clock time.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FramePacer } from '../../../../src/telephony/call/frame-pacer.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

const frame = () => new Uint8Array(160);

/** Advances the fake clock one 20 ms tick at a time until `settled()`, letting promise callbacks run. */
async function tickUntil(settled: () => boolean, maxTicks = 1000): Promise<void> {
  for (let i = 0; i < maxTicks && !settled(); i++) await vi.advanceTimersByTimeAsync(20);
}

describe('PacedStream.drained', () => {
  it('resolves once at most n frames wait, for any queue length and bound', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 120 }), fc.nat({ max: 130 }), async (queued, bound) => {
        const pacer = new FramePacer(40);
        let sent = 0;
        const stream = pacer.stream(() => (sent++, true));
        for (let i = 0; i < queued; i++) stream.frame(frame());
        let waitingAtResolve = -1;
        void stream.drained(bound).then(() => (waitingAtResolve = stream.queuedFrames));
        await tickUntil(() => waitingAtResolve >= 0);
        expect(waitingAtResolve).toBeGreaterThanOrEqual(0);
        expect(waitingAtResolve).toBeLessThanOrEqual(bound);
        // Not early: it resolved at the first tick that met the bound (one tick sends at most one frame after the lead).
        expect(waitingAtResolve).toBeGreaterThanOrEqual(Math.min(bound, queued) - 3);
        expect(sent).toBe(queued - stream.queuedFrames);
        pacer.close();
      }),
      { numRuns: 40 },
    );
  });

  it('drained() waits for the markers after the last frame too', async () => {
    const pacer = new FramePacer(40);
    const stream = pacer.stream(() => true);
    for (let i = 0; i < 10; i++) stream.frame(frame());
    let marked = false;
    stream.marker(() => (marked = true));
    let drained = false;
    void stream.drained().then(() => (drained = true));
    await vi.advanceTimersByTimeAsync(100);
    expect(drained).toBe(false);
    await tickUntil(() => drained);
    expect(drained).toBe(true);
    expect(marked).toBe(true);
    expect(stream.idle).toBe(true);
    pacer.close();
  });

  it('a clear (barge-in) or a close settles every wait at once', async () => {
    const pacer = new FramePacer(40);
    const stream = pacer.stream(() => true);
    for (let i = 0; i < 50; i++) stream.frame(frame());
    const settled: string[] = [];
    void stream.drained(10).then(() => settled.push('bounded'));
    void stream.drained().then(() => settled.push('all'));
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toEqual([]);
    stream.clear();
    await vi.advanceTimersByTimeAsync(0);
    expect(settled.sort()).toEqual(['all', 'bounded']);

    for (let i = 0; i < 50; i++) stream.frame(frame());
    let closed = false;
    void stream.drained().then(() => (closed = true));
    stream.close();
    await vi.advanceTimersByTimeAsync(0);
    expect(closed).toBe(true);
    pacer.close();
  });
});
