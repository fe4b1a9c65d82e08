/**
 * The Store's domain error for an outage: the database cannot be reached (refused, reset, timed out, shutting
 * down, out of connections). It is worth retrying, unlike a bug or a constraint violation, so the API answers
 * it 503 with Retry-After rather than 500. Only a networked store (PostgreSQL) raises it; the embedded
 * SQLite file has no outage of this kind.
 */
export class StoreUnavailableError extends Error {
  /**
   * @param detail the driver's account, for the log (may name hosts or socket paths)
   * @param reason a short code safe to show without authentication (ECONNREFUSED, 57P01, …)
   */
  constructor(readonly detail: string, readonly reason: string, options?: { cause?: unknown }) {
    super(`The account database is unavailable: ${detail}`, options);
    this.name = 'StoreUnavailableError';
  }
}
