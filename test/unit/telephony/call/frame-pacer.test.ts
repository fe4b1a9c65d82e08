import { afterEach, describe, expect, it, vi } from 'vitest';
import { FramePacer } from '../../../../src/telephony/call/frame-pacer.js';

describe('FramePacer lateness metric', () => {
  // Known defect (found by load-tests/telephony): the frames a stream sends ahead as the carrier's cushion
  // (its lead) are "due" before the clock starts (startClock puts nextDue a lead back), so each playback's
  // first frame is recorded in kuma_telephony_frame_lateness_seconds as 20–40 ms late although it left
  // early on purpose. With replies under 100 frames that alone lifts the histogram's p99 past 20 ms.
  // `it.fails` until the lateness is measured against the clock's start; then make it a plain `it`.
  it.fails('a stream that starts is not reported late for its lead frame', () => {
    const lateness: number[] = [];
    const pacer = new FramePacer(2, { frameLateness: (ms) => lateness.push(ms) });
    const stream = pacer.stream(() => true);
    stream.frame(new Uint8Array(160));
    stream.frame(new Uint8Array(160));
    pacer.close();
    expect(lateness.length).toBeGreaterThan(0);
    for (const ms of lateness) expect(ms).toBeLessThan(20);
  });
});

describe('FramePacer pacing while other streams keep its timer running', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  // Known defect (found by load-tests/telephony, where most replies under concurrency arrived as bursts of a
  // whole synthesized chunk): wake() starts a stream's clock on the timer's grid, floored, so up to 20 ms in
  // the past, and restarts it when `nextDue + leadMs < now`. CallVoice queues a chunk frame by frame; after
  // the first frame the stream is dry with nextDue on that past grid point, so with a 2 ms lead every next
  // frame restarts the clock and leaves at once. At 1 call the timer's grid starts at the first frame, so it
  // does not show. `it.fails` until fixed; then make it a plain `it`.
  it.fails('a chunk of frames queued one by one is paced, not sent at once', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const pacer = new FramePacer(2);
    const other = pacer.stream(() => true);
    for (let i = 0; i < 100; i++) other.frame(new Uint8Array(160));
    vi.advanceTimersByTime(95); // 15 ms past the timer's grid
    let sent = 0;
    const stream = pacer.stream(() => (sent++, true));
    for (let i = 0; i < 10; i++) stream.frame(new Uint8Array(160));
    pacer.close();
    // The lead frame and the one due now; the other eight are due one per 20 ms.
    expect(sent).toBeLessThanOrEqual(2);
  });
});
