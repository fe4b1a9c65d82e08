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
  constructor(
    readonly detail: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`The account database is unavailable: ${detail}`, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * A charge refused because the key it is for is no longer active (revoked, by any process): raised by
 * recordUsage with `requireActiveKey`, inside the transaction that would have written it, so nothing is
 * written and nothing debited. Sessions charge this way: from the moment a key is revoked, nothing more
 * is charged to it, whichever process revoked it and however late this one hears of it.
 */
export class KeyRevokedError extends Error {
  constructor(readonly keyId: string) {
    super(`The API key ${keyId} has been revoked: nothing more is charged to it.`);
    this.name = 'KeyRevokedError';
  }
}
