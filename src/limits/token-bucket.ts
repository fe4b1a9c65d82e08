/**
 * A per-minute budget as a token bucket: it holds at most `perMinute`, refills continuously at
 * `perMinute` per 60 s, and may go below zero when an amount known only after the work (audio seconds,
 * characters delivered) is charged at settlement: that debt is paid back by the refill before the next
 * request is admitted. A continuous refill has no window edge at which a client can send twice the limit.
 */
export const MINUTE_MS = 60_000;

export class TokenBucket {
  private level: number;
  private at: number;

  constructor(
    private capacity: number,
    now: number,
  ) {
    this.level = capacity;
    this.at = now;
  }

  /** Brings the level up to `now`; a changed limit (an operator's override) applies from here on. */
  refill(now: number, capacity: number = this.capacity): void {
    if (capacity !== this.capacity) {
      // A raised limit gives its extra at once, a lowered one clamps; debt is kept either way.
      this.level = Math.min(capacity, this.level + Math.max(0, capacity - this.capacity));
      this.capacity = capacity;
    }
    // A clock that steps back (an injected test clock, an NTP jump) must not drain the bucket.
    if (now > this.at) this.level = Math.min(this.capacity, this.level + ((now - this.at) * this.capacity) / MINUTE_MS);
    this.at = Math.max(this.at, now);
  }

  get limit(): number {
    return this.capacity;
  }

  /** Whole units left now (never negative). */
  get remaining(): number {
    return Math.max(0, Math.floor(this.level + 1e-9));
  }

  /** True when `amount` is available now (a request needs 1; an amount-metered request needs more than 0). */
  has(amount: number): boolean {
    return amount > 0 ? this.level + 1e-9 >= amount : this.level > 1e-9;
  }

  take(amount: number): void {
    this.level -= amount;
  }

  /** How long until `has(amount)` becomes true, in ms (0 when it already is). */
  msUntil(amount: number): number {
    const need = amount > 0 ? amount - this.level : 1e-6 - this.level;
    return need <= 0 ? 0 : (need * MINUTE_MS) / this.capacity;
  }

  /** How long until the bucket is full again (OpenAI's `x-ratelimit-reset-*`), in ms. */
  msUntilFull(): number {
    return ((this.capacity - this.level) * MINUTE_MS) / this.capacity;
  }

  get isFull(): boolean {
    return this.level >= this.capacity;
  }
}
