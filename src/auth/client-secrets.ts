/**
 * Realtime client secrets (ephemeral keys): an app's backend mints one with its API key and hands it to a
 * browser, which presents it in place of the key when it opens the realtime WebSocket. A secret is bound to
 * the account and key that minted it, lives at most ten minutes, is stored hashed, is accepted only by
 * routes that opt in (the realtime WebSocket route and the speech sockets) and is used once: only a connection that opens uses it up.
 *
 * Single use without losing a secret to a refusal: the upgrade that presents a secret takes it out of the
 * store at once (one atomic delete, so of two upgrades racing with one secret only one gets it), and if that
 * upgrade is then refused (session cap, rate limit, balance, a bad session, a plain GET, a client gone before
 * the 101) the secret is put back unchanged (`giveBackClientSecret`) and opens a later connection.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Caller, ClientSecretGrant } from './caller.js';
import { CredentialError } from './errors.js';
import type { ClientSecretRecord, Store } from '../store/store.js';

export const CLIENT_SECRET_PREFIX = 'ek_';
/** OpenAI allows up to two hours; ten minutes bounds what a leaked secret can be used for here. */
export const MAX_CLIENT_SECRET_TTL_S = 600;
export const MIN_CLIENT_SECRET_TTL_S = 10;

const INVALID_SECRET_MESSAGE = 'Invalid or already used client secret. Mint a new one with POST /realtime/client_secrets.';
const EXPIRED_SECRET_MESSAGE = 'This client secret has expired. Mint a new one with POST /realtime/client_secrets.';
export const SECRET_NOT_ACCEPTED_MESSAGE =
  'Client secrets (ek_…) are accepted only when opening the realtime WebSocket or a speech socket; use an API key for this request.';

export function isClientSecret(presented: string): boolean {
  return presented.startsWith(CLIENT_SECRET_PREFIX);
}

/** 256 random bits: like API keys, a fast hash is enough (there is no dictionary to attack). */
export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export interface MintedClientSecret {
  value: string;
  /** Seconds since the epoch, as the OpenAI API reports it. */
  expiresAt: number;
}

export async function mintClientSecret(
  store: Pick<Store, 'createClientSecret'>,
  caller: Caller,
  grant: { shape: ClientSecretGrant['shape']; session: Record<string, unknown>; ttlSeconds: number },
  now = Date.now(),
): Promise<MintedClientSecret> {
  const ttl = Math.min(MAX_CLIENT_SECRET_TTL_S, Math.max(MIN_CLIENT_SECRET_TTL_S, Math.floor(grant.ttlSeconds)));
  const value = CLIENT_SECRET_PREFIX + randomBytes(32).toString('base64url');
  const expiresAtMs = now + ttl * 1000;
  await store.createClientSecret(
    {
      secretHash: hashClientSecret(value),
      accountId: caller.account.id,
      keyId: caller.key.id,
      shape: grant.shape,
      session: grant.session,
      expiresAt: expiresAtMs,
    },
    now,
  );
  return { value, expiresAt: Math.floor(expiresAtMs / 1000) };
}

/** A secret taken out of the store for an upgrade: the caller it stands for, and the record to put back. */
export interface RedeemedClientSecret {
  caller: Caller;
  record: ClientSecretRecord;
}

/**
 * Takes a presented secret out of the store and returns the caller it stands for (the minting key, which must
 * still be active), with the session configuration given at minting; throws a CredentialError otherwise. An
 * expired secret, or one whose key was revoked, is used up: it could never open anything.
 */
export async function redeemClientSecret(
  store: Pick<Store, 'consumeClientSecret' | 'getKey' | 'getAccount' | 'getRateLimits'>,
  presented: string,
  now = Date.now(),
): Promise<RedeemedClientSecret> {
  const record = await store.consumeClientSecret(hashClientSecret(presented.trim()));
  if (!record) throw new CredentialError('invalid_client_secret', INVALID_SECRET_MESSAGE);
  if (record.expiresAt <= now) throw new CredentialError('expired_client_secret', EXPIRED_SECRET_MESSAGE);
  const [key, account] = await Promise.all([store.getKey(record.keyId), store.getAccount(record.accountId)]);
  // A key revoked after minting takes its secrets with it.
  if (!key || key.revokedAt !== null || !account) throw new CredentialError('invalid_client_secret', INVALID_SECRET_MESSAGE);
  const [accountLimits, keyLimits] = await Promise.all([store.getRateLimits(account.id), store.getRateLimits(key.id)]);
  return {
    caller: {
      account,
      key,
      limits: { account: accountLimits, key: keyLimits },
      clientSecret: { shape: record.shape, session: record.session, expiresAt: Math.floor(record.expiresAt / 1000) },
    },
    record,
  };
}

/**
 * Puts back a secret whose upgrade did not open a connection, as it was (same expiry, same session), so the
 * client can use it again. One that has expired meanwhile is not put back.
 */
export async function giveBackClientSecret(store: Pick<Store, 'createClientSecret'>, record: ClientSecretRecord, now = Date.now()): Promise<void> {
  if (record.expiresAt <= now) return;
  await store.createClientSecret(record, now);
}
