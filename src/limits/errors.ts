/**
 * The limits' domain error: a request refused because its key or account is over a limit. Only src/api/
 * maps it to HTTP (429 rate_limit_exceeded with Retry-After).
 */
export type LimitKind = 'requests' | 'tokens' | 'concurrent' | 'sessions';

const KIND_TEXT: Record<LimitKind, string> = {
  requests: 'requests per minute',
  tokens: 'tokens per minute',
  concurrent: 'concurrent requests',
  sessions: 'concurrent realtime sessions',
};

export class RateLimitedError extends Error {
  /** The x-ratelimit-* headers as they stood when the request was refused. */
  headers: Record<string, string> = {};

  constructor(
    readonly kind: LimitKind,
    /** `account acct_…` or `key key_…`: which of the two limits refused (ids are safe to show). */
    readonly scope: string,
    readonly limit: number,
    /** Whole seconds until a retry can succeed, at least 1. */
    readonly retryAfterSeconds: number,
  ) {
    super(`Rate limit reached for ${KIND_TEXT[kind]} on ${scope}: limit ${limit}. Please try again in ${retryAfterSeconds}s.`);
    this.name = 'RateLimitedError';
  }
}
