/**
 * The auth domain's errors that are not API-key failures. Auth knows nothing of HTTP: src/api/errors.ts
 * maps them (AdminAuthError: no or incorrect admin key → 401, an API key on the admin API → 403).
 */

/** Why a request to the admin API was refused: no admin key, one that is unknown or revoked, or an API key instead. */
export type AdminAuthFailure = 'missing' | 'incorrect' | 'api_key';

const ADMIN_AUTH_MESSAGES: Record<AdminAuthFailure, string> = {
  missing:
    'The admin endpoints need an admin key: send it as Authorization: Bearer kadm_…. ' +
    'An operator creates one with: npm run keys -- admin create',
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
