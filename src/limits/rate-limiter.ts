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
  /** Gives the in-flight places back; later calls do nothing. Call it as a method (`admission.release()`). */
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
    // Runs on every authenticated request: plain loops, no closure per call.
    const now = this.now();
    this.sweep(now);
    const states: (SubjectState | null)[] = new Array(subjects.length);
    let limited = false;
    for (let i = 0; i < subjects.length; i++) {
      const st = this.stateOf(subjects[i]!, now);
      states[i] = st;
      if (st) limited = true;
    }
    if (!limited) return NOOP_ADMISSION;

    const refusal = refusalOf(subjects, states);
    if (refusal) {
      refusal.headers = headersOf(states);
      throw refusal;
    }
    for (const st of states) {
      if (!st) continue;
      st.requests?.take(1);
      st.inFlight++;
      st.lastUsed = now;
    }
    return new HeldPlaces(states, headersOf(states));
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

/** The refusal with the longest wait among the limits `subjects` are over, or null when none is. */
function refusalOf(subjects: readonly LimitSubject[], states: readonly (SubjectState | null)[]): RateLimitedError | null {
  let refusal: RateLimitedError | null = null;
  for (let i = 0; i < subjects.length; i++) {
    const st = states[i];
    if (!st) continue;
    const { concurrent } = subjects[i]!.limits;
    // A place frees when some response ends; there is no schedule to predict, so retry after a second.
    if (concurrent > 0 && st.inFlight >= concurrent) refusal = longer(refusal, 'concurrent', st.scope, concurrent, 1000);
    if (st.requests && !st.requests.has(1)) refusal = longer(refusal, 'requests', st.scope, st.requests.limit, st.requests.msUntil(1));
    if (st.tokens && !st.tokens.has(0)) refusal = longer(refusal, 'tokens', st.scope, st.tokens.limit, st.tokens.msUntil(0));
  }
  return refusal;
}

function longer(current: RateLimitedError | null, kind: LimitKind, scope: string, limit: number, waitMs: number): RateLimitedError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return !current || seconds > current.retryAfterSeconds ? new RateLimitedError(kind, scope, limit, seconds) : current;
}

/** An admitted request's places on its subjects, given back once by `release`. */
class HeldPlaces implements Admission {
  private released = false;

  constructor(
    private readonly states: readonly (SubjectState | null)[],
    readonly headers: Record<string, string>,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    for (const st of this.states) if (st) st.inFlight--;
  }
}

/**
 * OpenAI's headers for the tighter of the limits in force (the one with fewer units left; on a tie, the
 * smaller limit), per dimension. A dimension unlimited for both key and account has no headers.
 */
function headersOf(states: readonly (SubjectState | null)[]): Record<string, string> {
  const headers: Record<string, string> = {};
  const requests = tightest(states, 'requests');
  if (requests) {
    headers['x-ratelimit-limit-requests'] = String(requests.limit);
    headers['x-ratelimit-remaining-requests'] = String(requests.remaining);
    headers['x-ratelimit-reset-requests'] = formatDuration(requests.msUntilFull());
  }
  const tokens = tightest(states, 'tokens');
  if (tokens) {
    headers['x-ratelimit-limit-tokens'] = String(tokens.limit);
    headers['x-ratelimit-remaining-tokens'] = String(tokens.remaining);
    headers['x-ratelimit-reset-tokens'] = formatDuration(tokens.msUntilFull());
  }
  return headers;
}

function tightest(states: readonly (SubjectState | null)[], dimension: 'requests' | 'tokens'): TokenBucket | null {
  let found: TokenBucket | null = null;
  for (const st of states) {
    const bucket = st && st[dimension];
    if (!bucket) continue;
    if (!found || bucket.remaining < found.remaining || (bucket.remaining === found.remaining && bucket.limit < found.limit)) found = bucket;
  }
  return found;
}
