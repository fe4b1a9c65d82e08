/**
 * Per-key and per-account limits, in memory: requests per minute and a per-minute amount (token buckets)
 * and requests in flight. A request is admitted only when BOTH its key and its account are under every
 * limit; a refusal changes no counter (a refused request uses no slot). An admitted request takes one
 * request from both buckets and one in-flight place on both, which `release` gives back exactly once.
 * Amounts are charged when the work settles (`charge`), since most are known only then.
 *
 * The counters live in this process: several server processes sharing one database each enforce the
 * limits on their own.
 */
import { formatDuration } from './duration.js';
import { RateLimitedError, type LimitKind } from './errors.js';
import type { Limits } from './limits.js';
import { TokenBucket } from './token-bucket.js';

interface SubjectState {
  scope: string;
  requests: TokenBucket | null;
  tokens: TokenBucket | null;
  inFlight: number;
  lastUsed: number;
}

export interface LimitSubject {
  /** Account id or key id: the two never collide (acct_… / key_…). */
  id: string;
  /** Shown in a refusal's message: `account acct_…`, `key key_…`. */
  scope: string;
  limits: Limits;
}

export interface Admission {
  /** x-ratelimit-* headers for this response (empty when nothing is limited). */
  headers: Record<string, string>;
  /** Gives the in-flight places back; later calls do nothing. */
  release(): void;
}

/** A subject idle this long with full buckets and nothing in flight is forgotten (it would start full anyway). */
const FORGET_AFTER_MS = 5 * 60_000;
const SWEEP_EVERY_MS = 60_000;
const NOOP_ADMISSION: Admission = Object.freeze({ headers: Object.freeze({}) as Record<string, string>, release: () => {} });

export class RateLimiter {
  private readonly subjects = new Map<string, SubjectState>();
  private lastSweep: number;

  constructor(private readonly now: () => number = Date.now) {
    this.lastSweep = now();
  }

  /** Admits a request of `subjects` (its account and its key) or throws RateLimitedError. */
  admit(subjects: readonly LimitSubject[]): Admission {
    const now = this.now();
    this.sweep(now);
    const states = subjects.map((s) => this.stateOf(s, now));
    if (states.every((st) => st === null)) return NOOP_ADMISSION;

    let refusal: RateLimitedError | null = null;
    const refuse = (kind: LimitKind, scope: string, limit: number, waitMs: number) => {
      const seconds = Math.max(1, Math.ceil(waitMs / 1000));
      if (!refusal || seconds > refusal.retryAfterSeconds) refusal = new RateLimitedError(kind, scope, limit, seconds);
    };
    subjects.forEach((subject, i) => {
      const st = states[i];
      if (!st) return;
      const { concurrent } = subject.limits;
      // A place frees when some response ends; there is no schedule to predict, so retry after a second.
      if (concurrent > 0 && st.inFlight >= concurrent) refuse('concurrent', st.scope, concurrent, 1000);
      if (st.requests && !st.requests.has(1)) refuse('requests', st.scope, st.requests.limit, st.requests.msUntil(1));
      if (st.tokens && !st.tokens.has(0)) refuse('tokens', st.scope, st.tokens.limit, st.tokens.msUntil(0));
    });
    if (refusal) {
      (refusal as RateLimitedError).headers = headersOf(states);
      throw refusal;
    }

    for (const st of states) {
      if (!st) continue;
      st.requests?.take(1);
      st.inFlight++;
      st.lastUsed = now;
    }
    let released = false;
    return {
      headers: headersOf(states),
      release: () => {
        if (released) return;
        released = true;
        for (const st of states) if (st) st.inFlight--;
      },
    };
  }

  /** Counts an amount delivered (from the ledger's settlement) against the key's and account's buckets. */
  charge(subjectIds: readonly string[], amount: number): void {
    if (!(amount > 0)) return;
    const now = this.now();
    for (const id of subjectIds) {
      const st = this.subjects.get(id);
      if (!st?.tokens) continue;
      st.tokens.refill(now);
      st.tokens.take(amount);
      st.lastUsed = now;
    }
  }

  /** Requests in flight for an account or key (for tests and metrics). */
  inFlight(subjectId: string): number {
    return this.subjects.get(subjectId)?.inFlight ?? 0;
  }

  private stateOf(subject: LimitSubject, now: number): SubjectState | null {
    const { requestsPerMinute, tokensPerMinute, concurrent } = subject.limits;
    let st = this.subjects.get(subject.id);
    if (!st) {
      if (requestsPerMinute === 0 && tokensPerMinute === 0 && concurrent === 0) return null;
      st = { scope: subject.scope, requests: null, tokens: null, inFlight: 0, lastUsed: now };
      this.subjects.set(subject.id, st);
    }
    // Limits may change between requests (an override set or cleared): buckets follow them.
    st.requests = bucketFor(st.requests, requestsPerMinute, now);
    st.tokens = bucketFor(st.tokens, tokensPerMinute, now);
    // A subject that became unlimited still tracks what it has in flight, so releases stay balanced.
    return st;
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    for (const [id, st] of this.subjects) {
      if (st.inFlight > 0 || now - st.lastUsed < FORGET_AFTER_MS) continue;
      st.requests?.refill(now);
      st.tokens?.refill(now);
      if ((st.requests?.isFull ?? true) && (st.tokens?.isFull ?? true)) this.subjects.delete(id);
    }
  }
}

function bucketFor(bucket: TokenBucket | null, perMinute: number, now: number): TokenBucket | null {
  if (perMinute === 0) return null;
  if (!bucket) return new TokenBucket(perMinute, now);
  bucket.refill(now, perMinute);
  return bucket;
}

/**
 * OpenAI's headers for the tighter of the limits in force (the one with fewer units left; on a tie, the
 * smaller limit), per dimension. A dimension unlimited for both key and account has no headers.
 */
function headersOf(states: readonly (SubjectState | null)[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, pick] of [
    ['requests', (st: SubjectState) => st.requests],
    ['tokens', (st: SubjectState) => st.tokens],
  ] as const) {
    let tightest: TokenBucket | null = null;
    for (const st of states) {
      const bucket = st && pick(st);
      if (!bucket) continue;
      if (!tightest || bucket.remaining < tightest.remaining || (bucket.remaining === tightest.remaining && bucket.limit < tightest.limit)) tightest = bucket;
    }
    if (!tightest) continue;
    headers[`x-ratelimit-limit-${name}`] = String(tightest.limit);
    headers[`x-ratelimit-remaining-${name}`] = String(tightest.remaining);
    headers[`x-ratelimit-reset-${name}`] = formatDuration(tightest.msUntilFull());
  }
  return headers;
}
