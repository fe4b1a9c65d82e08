/**
 * The auth domain's errors. Auth knows nothing of HTTP: src/api/errors.ts maps them (CredentialError: a
 * missing, unknown, revoked or malformed key, or an unusable client secret → 401 `invalid_api_key`;
 * AdminAuthError: no or incorrect admin key → 401, an API key on the admin API → 403).
 */

/** Why a presented credential was refused: no API key, one that is not (or no longer) valid, or a client secret that cannot be used. */
export type CredentialFailure = 'missing_key' | 'incorrect_key' | 'invalid_client_secret' | 'expired_client_secret';

/** A credential that does not authenticate anyone; the message says what to do and never echoes the credential. */
export class CredentialError extends Error {
  /** The code clients know this refusal by, whichever credential it was (OpenAI's `invalid_api_key`). */
  readonly code = 'invalid_api_key';

  constructor(
    readonly reason: CredentialFailure,
    message: string,
  ) {
    super(message);
    this.name = 'CredentialError';
  }
}

/** Why a request to the admin API was refused: no admin key, one that is unknown or revoked, or an API key instead. */
export type AdminAuthFailure = 'missing' | 'incorrect' | 'api_key';

const ADMIN_AUTH_MESSAGES: Record<AdminAuthFailure, string> = {
  missing: 'The admin endpoints need an admin key: send it as Authorization: Bearer kadm_…. ' + 'An operator creates one with: npm run keys -- admin create',
  // Never echo the presented key, not even a prefix: it may be a real key pasted into the wrong place.
  incorrect: 'Incorrect admin key provided (unknown or revoked). Check the key you are sending, or create a new one with: npm run keys -- admin create',
  api_key: 'API keys cannot use the admin endpoints; use an admin key (Authorization: Bearer kadm_…).',
};

export class AdminAuthError extends Error {
  constructor(readonly reason: AdminAuthFailure) {
    super(ADMIN_AUTH_MESSAGES[reason]);
    this.name = 'AdminAuthError';
  }
}
