/**
 * API keys: how they are made, how they are stored (as a hash, never the key), how a request presents
 * one, and how a presented key is turned into the account and key record it belongs to.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { CredentialError } from './errors.js';
import type { Account, ApiKeyRecord, LimitOverrides, Store } from '../store/store.js';

/** Any RFC 4122-shaped UUID, either case: clients validate the key's shape and refuse anything else. */
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const BEARER_PATTERN = /^bearer\s+(.+)$/i;

export const MISSING_KEY_MESSAGE =
  "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth " +
  '(i.e. Authorization: Bearer YOUR_KEY), or in an x-api-key header.';

// Never echo the presented key (not even a prefix): it may be a real key pasted into the wrong place.
export const INCORRECT_KEY_MESSAGE = 'Incorrect API key provided. Check the key you are sending, or ask your administrator for a new one.';

/** A new key: a random (version 4) UUID, 122 bits from the CSPRNG; real clients refuse non-UUID keys. */
export function generateApiKey(): string {
  return randomUUID();
}

export function isWellFormedApiKey(candidate: string): boolean {
  return UUID_PATTERN.test(candidate);
}

/**
 * The stored form of a key: SHA-256 hex of the lower-cased key (UUIDs are case-insensitive, so both
 * spellings of one key match). A fast hash is right here: keys carry 122 random bits, so there is no
 * dictionary to attack and a slow password hash (bcrypt, scrypt) would only add latency to every request.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key.toLowerCase(), 'utf8').digest('hex');
}

/**
 * The key a request presents: `Authorization: Bearer <key>` (scheme in any case) or `x-api-key: <key>`.
 * Authorization wins when both are present with a usable value.
 */
export function extractApiKey(headers: { authorization?: string; 'x-api-key'?: string }): string | undefined {
  const bearer = bearerToken(headers.authorization);
  if (bearer) return bearer;
  const headerKey = headers['x-api-key']?.trim();
  return headerKey || undefined;
}

/** The credential of `Authorization: Bearer <credential>` (scheme in any case), or undefined. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const header = authorization?.trim();
  return (header && BEARER_PATTERN.exec(header)?.[1]?.trim()) || undefined;
}

export interface AuthenticatedKey {
  account: Account;
  key: ApiKeyRecord;
  limits: { account: LimitOverrides; key: LimitOverrides };
}

/** Where keys are looked up: the store itself, or the in-memory KeyCache in front of it. */
export type KeyLookup = Pick<Store, 'findKeyByHash'>;

/** Compares two hex digests in constant time (equal lengths are guaranteed by both being SHA-256). */
export function digestsEqual(aHex: string, bHex: string): boolean {
  const a = Buffer.from(aHex, 'hex');
  const b = Buffer.from(bHex, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Resolves a presented key to its account and active key record, or throws a CredentialError.
 * Revoked keys are not found by the store, so they fail exactly like unknown ones.
 */
export async function authenticateApiKey(store: KeyLookup, presented: string | undefined): Promise<AuthenticatedKey> {
  const candidate = presented?.trim();
  if (!candidate) throw new CredentialError('missing_key', MISSING_KEY_MESSAGE);

  // Hash before looking at the shape, so a malformed key costs the same work as a well-formed one and
  // response timing says nothing about which check failed; malformed keys then skip the DB lookup.
  const computedHash = hashApiKey(candidate);
  if (!isWellFormedApiKey(candidate)) throw new CredentialError('incorrect_key', INCORRECT_KEY_MESSAGE);

  const found = await store.findKeyByHash(computedHash);
  // The index lookup matched on equality already; the constant-time re-check guards against a store
  // implementation whose lookup is looser (e.g. case-folding collation) ever accepting a wrong key.
  if (!found || !digestsEqual(found.keyHash, computedHash) || found.key.revokedAt !== null) {
    throw new CredentialError('incorrect_key', INCORRECT_KEY_MESSAGE);
  }
  return { account: found.account, key: found.key, limits: found.limits };
}

/** Browsers' way to send a key on a WebSocket (they cannot set headers): a subprotocol entry. */
export const KEY_SUBPROTOCOL_PREFIX = 'openai-insecure-api-key.';

/** The key carried in a Sec-WebSocket-Protocol header as `openai-insecure-api-key.<key>`, if any. */
export function keyFromSubprotocols(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const entry of header.split(',')) {
    const candidate = entry.trim();
    if (candidate.startsWith(KEY_SUBPROTOCOL_PREFIX)) return candidate.slice(KEY_SUBPROTOCOL_PREFIX.length) || undefined;
  }
  return undefined;
}
