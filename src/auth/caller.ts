/**
 * Who is asking: the account and API key a request or a session acts for, as authentication found them
 * (src/auth/api-keys.ts), or as a client secret stood for them (src/auth/client-secrets.ts). Every route
 * handler and session is given one; billing, limits and revocation are keyed by it.
 */
import type { Account, ApiKeyRecord, LimitOverrides } from '../store/store.js';

/** The authenticated account and key behind a request. */
export interface Caller {
  account: Account;
  key: ApiKeyRecord;
  /** The rate-limit overrides stored for the account and the key (absent: the defaults apply). */
  limits?: { account: LimitOverrides; key: LimitOverrides };
  /** Present when the caller authenticated with a client secret: what was granted when it was minted. */
  clientSecret?: ClientSecretGrant;
}

/** The session configuration given when a client secret was minted, for the session to start with. */
export interface ClientSecretGrant {
  /** `ga`: minted by POST /realtime/client_secrets (`session` is its `session`); `beta`: by POST /realtime/transcription_sessions (`session` is the body). */
  shape: 'ga' | 'beta';
  session: Record<string, unknown>;
  /** Seconds since the epoch. */
  expiresAt: number;
}
