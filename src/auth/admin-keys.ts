/**
 * Admin keys: the credentials of the admin API (/admin/v1), kept apart from API keys so that a key given to
 * an application can never manage accounts, and an admin key can never run billable work. How they are
 * made (`kadm_` + 32 random bytes in base64url), stored (SHA-256 only), presented (`Authorization: Bearer`)
 * and checked; and the one created on first start so a fresh install can open the console at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { AdminKeyRecord, Store } from '../store/store.js';
import { bearerToken, digestsEqual, isWellFormedApiKey } from './api-keys.js';
import { isClientSecret } from './client-secrets.js';
import { AdminAuthError } from './errors.js';

export const ADMIN_KEY_PREFIX = 'kadm_';
/** 32 bytes in base64url without padding are exactly 43 characters. */
const ADMIN_KEY_PATTERN = /^kadm_[A-Za-z0-9_-]{43}$/;

export const DEV_ADMIN_KEY_LABEL = 'dev admin key (created on first start)';

export function generateAdminKey(): string {
  return ADMIN_KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function isWellFormedAdminKey(candidate: string): boolean {
  return ADMIN_KEY_PATTERN.test(candidate);
}

/**
 * SHA-256 hex of the key as given: base64url is case-sensitive, so unlike API keys (UUIDs) it is not
 * lower-cased. A fast hash suffices for 256 random bits, as for API keys (src/auth/api-keys.ts).
 */
export function hashAdminKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * The admin key behind an `Authorization` header, or an AdminAuthError saying why not. An API key (a UUID)
 * or a realtime client secret (`ek_…`) is refused by its shape alone, without a lookup: the answer is the
 * same whether or not that key exists, and it tells the caller which kind of key the admin API wants.
 */
export async function authenticateAdminKey(store: Pick<Store, 'findAdminKeyByHash'>, authorization: string | undefined): Promise<AdminKeyRecord> {
  const candidate = bearerToken(authorization);
  if (!candidate) throw new AdminAuthError('missing');
  if (isWellFormedApiKey(candidate) || isClientSecret(candidate)) throw new AdminAuthError('api_key');
  // Hash before looking at the shape, so a malformed key costs the same work as a well-formed one.
  const computedHash = hashAdminKey(candidate);
  if (!isWellFormedAdminKey(candidate)) throw new AdminAuthError('incorrect');
  const found = await store.findAdminKeyByHash(computedHash);
  // The lookup matched on equality already; the constant-time re-check guards a looser store lookup.
  if (!found || !digestsEqual(found.keyHash, computedHash) || found.key.revokedAt !== null) throw new AdminAuthError('incorrect');
  return found.key;
}

/** A new admin key, stored by its hash; `adminKey` is returned for showing once and is never kept. */
export async function createAdminKey(store: Pick<Store, 'createAdminKey'>, label: string): Promise<{ adminKey: string; record: AdminKeyRecord }> {
  const adminKey = generateAdminKey();
  const record = await store.createAdminKey(hashAdminKey(adminKey), label);
  return { adminKey, record };
}

/**
 * First start: a store that has never had an admin key (revoked ones count, so revoking every key does not
 * bring a new one back at the next start) gets one, returned for printing to the operator's terminal.
 */
export async function ensureDevAdminKey(store: Pick<Store, 'countAdminKeys' | 'createAdminKey'>): Promise<{ adminKey: string; record: AdminKeyRecord } | null> {
  if ((await store.countAdminKeys()) > 0) return null;
  return createAdminKey(store, DEV_ADMIN_KEY_LABEL);
}
