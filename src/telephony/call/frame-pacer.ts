/**
 * Sends every call's outbound audio at real-time pace, 20 ms frame by 20 ms frame, from ONE timer for all
 * calls. Carriers play what they receive into a jitter buffer; audio sent faster than real time piles up
 * there, where a barge-in `clear` is the only way to drop it and where Kuma cannot know what has been heard.
 * Paced frames keep the carrier's buffer short (barge-in stops the voice within a frame or two) and make "what
 * was played" a matter of counting frames.
 *
 * The timer is scheduled on absolute time (tick n is due at t0 + n × 20 ms), so lateness does not accumulate:
 * a late tick sends every frame that is due by then, each stream catching up to its own clock. A stream's
 * clock starts when its first frame is queued after a silence (a `PacedStream` that ran dry restarts there),
 * on the timer's grid, with `leadMs` of audio sent at once so the carrier's buffer never runs empty on a late
 * tick. Frames last 20 ms, or what the carrier asks for (Exotel: 100 ms), a multiple of the 20 ms tick.
 *
 * Lateness is measured per frame (actual send time − due time) for the jitter histogram.
 *
 * A producer awaits `drained(frames)` to keep at most that many frames queued (a call's voice keeps synthesis
 * a couple of seconds ahead of the line), or everything sent (0), rather than polling.
 */

export const FRAME_MS = 20;
const EARLY_MS = 2;

/** What a paced stream hands out: audio frames, or markers to send right after the frame before them. */
export type PacedItem = { kind: 'frame'; bytes: Uint8Array } | { kind: 'marker'; send(): void };

export interface PacerObserver {
  /** A frame went out this many ms after it was due (0 when on time). */
  frameLateness(ms: number): void;
}

export class PacedStream {
  private readonly items: PacedItem[] = [];
  private head = 0;
  /** Due time (performance.now()) of the next frame; NaN while the stream is idle. */
  nextDue = Number.NaN;
  framesSent = 0;
  /** When the clock last started (performance.now()). */
  private startedAt = 0;
  private closed = false;
  private queued = 0; // frames queued and not yet sent
  private waiters: Array<{ frames: number; resolve: () => void }> = [];

  constructor(
    private readonly pacer: FramePacer,
    private readonly sendFrame: (bytes: Uint8Array) => boolean,
    /** Duration of one frame: 20 ms for most carriers, 100 ms for Exotel (a multiple of the tick). */
    readonly frameMs: number = FRAME_MS,
  ) {}

  /** Queues one frame (exactly 20 ms of audio, except a playback's last). */
  frame(bytes: Uint8Array): void {
    if (this.closed) return;
    this.items.push({ kind: 'frame', bytes });
    this.queued++;
    this.pacer.wake(this);
  }

  /** Queues a marker: `send` runs once every frame queued before it has been sent. */
  marker(send: () => void): void {
    if (this.closed) return;
    this.items.push({ kind: 'marker', send });
    this.pacer.wake(this);
  }

  /** Frames queued and not yet sent. */
  get queuedFrames(): number {
    return this.queued;
  }

  get idle(): boolean {
    return this.head >= this.items.length;
  }

  /**
   * Resolves once at most `frames` frames wait to be sent — with 0, once everything queued has gone, markers
   * included — or the stream was cleared or closed.
   */
  drained(frames = 0): Promise<void> {
    if (this.drainedTo(frames)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ frames, resolve }));
  }

  /** Drops everything queued (barge-in); returns how many frames were dropped. */
  clear(): number {
    const dropped = this.queued;
    this.items.length = 0;
    this.head = 0;
    this.queued = 0;
    this.nextDue = Number.NaN;
    this.notify();
    return dropped;
  }

  close(): void {
    this.clear();
    this.closed = true;
    this.pacer.remove(this);
  }

  /** Sends what is due at `now`; returns false when the stream ran dry (it leaves the pacer's active set). */
  service(now: number, observer: PacerObserver | undefined): boolean {
    while (this.head < this.items.length) {
      const item = this.items[this.head]!;
      if (item.kind === 'marker') {
        this.head++;
        item.send();
        continue;
      }
      // Timers fire on whole milliseconds, sometimes a fraction early: a frame due within EARLY_MS goes now
      // rather than a whole tick late.
      if (this.nextDue - now > EARLY_MS) {
        this.notify();
        return true;
      }
      this.head++;
      this.queued--;
      // The lead frames were due (on the schedule) before the clock started: they are on time when it starts.
      observer?.frameLateness(Math.max(0, now - Math.max(this.nextDue, this.startedAt)));
      this.nextDue += this.frameMs;
      this.framesSent++;
      if (!this.sendFrame(item.bytes)) {
        this.close();
        return false;
      }
    }
    // Dry: forget the sent items. The clock stays: a frame queued before its due time keeps the cadence; one
    // queued after a real pause starts a new clock (wake()).
    this.items.length = 0;
    this.head = 0;
    this.notify();
    return false;
  }

  private drainedTo(frames: number): boolean {
    return frames === 0 ? this.idle : this.queued <= frames;
  }

  /** Resolves the waiters whose bound is met. */
  private notify(): void {
    if (!this.waiters.length) return;
    const waiting = this.waiters;
    this.waiters = [];
    for (const waiter of waiting) {
      if (this.drainedTo(waiter.frames)) waiter.resolve();
      else this.waiters.push(waiter);
    }
  }

  /**
   * Starts the stream's clock on `anchor` (the timer's last grid point): the first `leadMs` of frames are due at
   * once, the rest one frame duration apart.
   */
  startClock(anchor: number, leadMs: number, now: number): void {
    this.nextDue = anchor - Math.floor(leadMs / this.frameMs) * this.frameMs;
    this.startedAt = now;
  }
}

export class FramePacer {
  private readonly active = new Set<PacedStream>();
  private timer: NodeJS.Timeout | null = null;
  /** The timer's grid: ticks fall at origin + k × 20 ms, whether or not the timer ran in between. */
  private origin = performance.now();

  constructor(
    /** Audio sent at once when a stream starts (its first audio after a silence): the carrier's cushion. */
    readonly leadMs = 40,
    private readonly observer?: PacerObserver,
  ) {}

  stream(sendFrame: (bytes: Uint8Array) => boolean, frameMs = FRAME_MS): PacedStream {
    return new PacedStream(this, sendFrame, frameMs);
  }

  /** A stream has something new: start its clock if it was idle, and send what is due now. */
  wake(stream: PacedStream): void {
    const now = performance.now();
    // On the timer's grid: the stream's frames fall due exactly when a tick runs.
    // A stream whose schedule fell behind by more than the lead has let the carrier's buffer run dry: it starts anew.
    if (Number.isNaN(stream.nextDue) || stream.nextDue + this.leadMs < now)
      stream.startClock(this.origin + Math.floor((now - this.origin) / FRAME_MS) * FRAME_MS, this.leadMs, now);
    if (stream.service(now, this.observer)) this.active.add(stream);
    else this.active.delete(stream);
    if (!this.timer && this.active.size) this.schedule();
  }

  remove(stream: PacedStream): void {
    this.active.delete(stream);
  }

  get activeStreams(): number {
    return this.active.size;
  }

  /** The next tick on the grid after now. */
  private schedule(): void {
    const now = performance.now();
    const next = this.origin + (Math.floor((now - this.origin) / FRAME_MS) + 1) * FRAME_MS;
    this.timer = setTimeout(() => this.run(next), next - now);
  }

  private run(due: number): void {
    const now = performance.now();
    for (const stream of this.active) if (!stream.service(now, this.observer)) this.active.delete(stream);
    if (!this.active.size) {
      this.timer = null;
      return;
    }
    // Far behind (a long pause of the event loop): the grid moves to now rather than firing catch-up ticks.
    if (now - due > 5 * FRAME_MS) this.origin = now;
    this.schedule();
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const stream of this.active) stream.clear();
    this.active.clear();
  }
}
