/**
 * The frame pacer's schedule, with a fake clock (vitest's timers and performance.now): frames leave one frame
 * duration apart after a lead; a stream whose producer is briefly late keeps its cadence; one that paused
 * longer than the lead starts a new clock; markers go out right after the frames before them; clear drops
 * what is queued; Exotel-length frames (100 ms) are paced by their duration. Orderings and schedule positions
 * on the fake clock, not wall-clock timing.
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

describe('FramePacer', () => {
  it('sends the lead at once, then one frame per 20 ms; a marker right after the frame before it', () => {
    const pacer = new FramePacer(40);
    const sent: Array<[string, number]> = [];
    const t0 = performance.now();
    const stream = pacer.stream(() => (sent.push(['frame', performance.now() - t0]), true));
    for (let i = 0; i < 5; i++) stream.frame(frame());
    stream.marker(() => sent.push(['mark', performance.now() - t0]));
    for (let i = 0; i < 5; i++) stream.frame(frame());
    vi.advanceTimersByTime(1000);
    const frames = sent.filter(([k]) => k === 'frame').map(([, at]) => Math.round(at));
    expect(frames).toEqual([0, 0, 0, 20, 40, 60, 80, 100, 120, 140]);
    const markIndex = sent.findIndex(([k]) => k === 'mark');
    expect(markIndex).toBe(5);
    pacer.close();
  });

  it('a producer late by less than the lead keeps the cadence; a pause longer than the lead starts a new clock', () => {
    const pacer = new FramePacer(40);
    const sent: number[] = [];
    const t0 = performance.now();
    const stream = pacer.stream(() => (sent.push(Math.round(performance.now() - t0)), true));
    stream.frame(frame());
    stream.frame(frame());
    stream.frame(frame());
    vi.advanceTimersByTime(30); // dry since t=0; the schedule's next slot is t=20
    stream.frame(frame()); // late by 10 ms: goes now, the clock is kept
    stream.frame(frame()); // due at 40
    vi.advanceTimersByTime(100);
    expect(sent).toEqual([0, 0, 0, 30, 40]);
    vi.advanceTimersByTime(500); // a real pause
    stream.frame(frame());
    stream.frame(frame());
    stream.frame(frame());
    stream.frame(frame());
    vi.advanceTimersByTime(200);
    // A new clock on the grid (620): its lead and the current frame at once, then the next tick (640).
    expect(sent.slice(5)).toEqual([630, 630, 630, 640]);
    pacer.close();
  });

  it('clear drops what is queued; 100 ms frames are paced 100 ms apart', () => {
    const pacer = new FramePacer(40);
    const sent: number[] = [];
    const t0 = performance.now();
    const exotel = pacer.stream(() => (sent.push(Math.round(performance.now() - t0)), true), 100);
    for (let i = 0; i < 4; i++) exotel.frame(new Uint8Array(1600));
    vi.advanceTimersByTime(150);
    expect(sent).toEqual([0, 100]);
    expect(exotel.clear()).toBe(2);
    vi.advanceTimersByTime(500);
    expect(sent).toEqual([0, 100]);
    pacer.close();
  });

  it('every frame queued is sent exactly once, in order, whatever the arrival pattern (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 120 }), fc.integer({ min: 1, max: 8 })), { minLength: 1, maxLength: 30 }), (bursts) => {
        const pacer = new FramePacer(40);
        const sent: number[] = [];
        const stream = pacer.stream((bytes) => (sent.push(bytes[0]!), true));
        let next = 0;
        for (const [wait, count] of bursts) {
          vi.advanceTimersByTime(wait);
          for (let i = 0; i < count; i++) stream.frame(Uint8Array.of(next++ % 256));
        }
        vi.advanceTimersByTime(next * 20 + 100);
        pacer.close();
        return sent.length === next && sent.every((v, i) => v === i % 256);
      }),
      { numRuns: 100 },
    );
  });
});

describe('FramePacer under concurrency (found by load-tests/telephony)', () => {
  it('a chunk queued frame by frame while another stream keeps the timer running is paced, not sent at once', () => {
    const pacer = new FramePacer(40);
    const other = pacer.stream(() => true);
    for (let i = 0; i < 100; i++) other.frame(frame());
    vi.advanceTimersByTime(95); // 15 ms past the timer's grid
    let sent = 0;
    const stream = pacer.stream(() => (sent++, true));
    for (let i = 0; i < 10; i++) stream.frame(frame());
    // The lead (two frames) and the one due now; the other seven one per 20 ms.
    expect(sent).toBe(3);
    vi.advanceTimersByTime(60);
    expect(sent).toBe(6);
    pacer.close();
  });

  it('the lead frames a stream sends ahead on purpose are not reported late', () => {
    const lateness: number[] = [];
    const pacer = new FramePacer(40, { frameLateness: (ms) => lateness.push(ms) });
    vi.advanceTimersByTime(13); // off the grid
    const stream = pacer.stream(() => true);
    for (let i = 0; i < 5; i++) stream.frame(frame());
    vi.advanceTimersByTime(200);
    pacer.close();
    expect(lateness).toHaveLength(5);
    for (const ms of lateness) expect(ms).toBeLessThan(2);
  });
});
