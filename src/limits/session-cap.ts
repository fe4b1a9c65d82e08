/**
 * The per-key cap on concurrent WebSocket sessions (KUMA_REALTIME_MAX_SESSIONS_PER_KEY). A session holds
 * its place from the moment its route accepted the upgrade until its socket closes; a refusal happens
 * before the upgrade, as an HTTP 429. In memory: sessions live in this process, so do their places.
 */
import { RateLimitedError } from './errors.js';

export class SessionCap {
  private readonly open = new Map<string, number>();

  /** `max` = 0: unlimited. */
  constructor(private readonly max: number) {}

  /** Takes a place for `keyId` and returns its release (idempotent), or throws RateLimitedError('sessions'). */
  acquire(keyId: string): () => void {
    const count = this.open.get(keyId) ?? 0;
    if (this.max > 0 && count >= this.max) throw new RateLimitedError('sessions', `key ${keyId}`, this.max, 1);
    this.open.set(keyId, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(keyId) ?? 1) - 1;
      if (left <= 0) this.open.delete(keyId);
      else this.open.set(keyId, left);
    };
  }

  /** Sessions `keyId` has open now. */
  count(keyId: string): number {
    return this.open.get(keyId) ?? 0;
  }
}
