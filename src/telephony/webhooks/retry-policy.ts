/**
 * When a failed webhook attempt is worth another try, and how long to wait before it. Network errors,
 * timeouts, 408, 429 and 5xx are passing troubles; any other status says the receiver will not take this
 * event (a 400 stays a 400), so retrying would only repeat it. Waits grow exponentially with jitter, so that
 * many calls failing at once do not come back in lockstep; a Retry-After the receiver sent is honoured up to
 * a cap (a receiver must not be able to park a call's events for hours).
 */

export interface RetryOptions {
  /** Attempts per event, the first included. */
  maxAttempts: number;
  /** Wait before the second attempt; doubles for each further one. */
  baseDelayMs: number;
  /** Longest wait between two attempts from the backoff. */
  maxDelayMs: number;
  /** Longest Retry-After honoured. */
  retryAfterCapMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { maxAttempts: 6, baseDelayMs: 500, maxDelayMs: 30_000, retryAfterCapMs: 60_000 };

/** The outcome of one attempt, reduced to what the sender acts on. */
export type AttemptOutcome =
  { kind: 'delivered'; status: number } | { kind: 'retry'; reason: string; retryAfterMs?: number } | { kind: 'reject'; reason: string };

export function outcomeOfStatus(status: number, retryAfter: string | null, nowMs: number = Date.now()): AttemptOutcome {
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status === 408 || status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfter(retryAfter, nowMs);
    return retryAfterMs === undefined ? { kind: 'retry', reason: `status ${status}` } : { kind: 'retry', reason: `status ${status}`, retryAfterMs };
  }
  // 3xx lands here too: redirects are not followed, since a redirect could lead to a host the allow-list refuses.
  return { kind: 'reject', reason: `status ${status}` };
}

/** Retry-After as seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/**
 * The wait after failed attempt number `attempt` (1 = the first): half the exponential step fixed, half
 * random ("equal jitter"), never below what the receiver asked for (up to the cap).
 */
export function retryDelayMs(attempt: number, options: RetryOptions, retryAfterMs?: number, random: () => number = Math.random): number {
  const step = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  const backoff = step / 2 + random() * (step / 2);
  const asked = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, options.retryAfterCapMs);
  return Math.round(Math.max(backoff, asked));
}
