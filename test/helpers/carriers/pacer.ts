/**
 * Real-time pacing for simulated carriers: frame i of a stream is due at `origin + i × frameMs / speed`, an
 * absolute schedule, so a late timer makes the next frame sooner rather than pushing every later frame back
 * (a chain of `setTimeout(20)` drifts by each timer's lateness). `speed` 1 is real time; a larger speed sends
 * faster for quick tests; Infinity sends without waiting (yielding to the event loop now and then).
 */
import { setTimeout as sleep, setImmediate as yieldNow } from 'node:timers/promises';

export class StreamClock {
  /** Wall time (performance.now()) at which stream time 0 was due. */
  private origin: number | null = null;
  /** Stream time (ms of audio) already sent. */
  private sentMs = 0;

  constructor(readonly speed = 1) {
    if (!(speed > 0)) throw new RangeError('speed must be > 0');
  }

  /** Stream time of the next frame, in ms of audio since the stream began (a carrier's media timestamp). */
  get streamMs(): number {
    return this.sentMs;
  }

  /**
   * Waits until the next frame of `frameMs` is due, then counts it as sent. After a pause longer than one frame
   * (the caller stopped sending), the schedule restarts from now instead of bursting to catch up.
   */
  async next(frameMs: number): Promise<void> {
    if (this.speed === Infinity) {
      if (this.sentMs % 200 < frameMs) await yieldNow();
      this.sentMs += frameMs;
      return;
    }
    const now = performance.now();
    if (this.origin === null) this.origin = now - this.sentMs / this.speed;
    let due = this.origin + this.sentMs / this.speed;
    if (now - due > frameMs / this.speed) {
      this.origin = now - this.sentMs / this.speed;
      due = now;
    }
    if (due > now) await sleep(due - now);
    this.sentMs += frameMs;
  }
}
