/**
 * Admin keys: their shape and hash, authentication from an Authorization header (every way to be refused,
 * and which refusal), and the one made on first start — only on a store that never had any.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  authenticateAdminKey,
  createAdminKey,
  DEV_ADMIN_KEY_LABEL,
  ensureDevAdminKey,
  generateAdminKey,
  hashAdminKey,
  isWellFormedAdminKey,
} from '../../../src/auth/admin-keys.js';
import { AdminAuthError, type AdminAuthFailure } from '../../../src/auth/errors.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';

let store: Store;
beforeEach(async () => {
  store = await openSqliteStore(':memory:');
});
afterEach(() => store.close());

async function refusal(authorization: string | undefined): Promise<AdminAuthFailure> {
  const err = await authenticateAdminKey(store, authorization).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AdminAuthError);
  return (err as AdminAuthError).reason;
}

describe('admin keys', () => {
  it('are kadm_ and 43 base64url characters (32 random bytes), each different', () => {
    const keys = new Set(Array.from({ length: 50 }, generateAdminKey));
    expect(keys.size).toBe(50);
    for (const key of keys) {
      expect(key).toMatch(/^kadm_[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(key.slice(5), 'base64url')).toHaveLength(32);
      expect(isWellFormedAdminKey(key)).toBe(true);
    }
    expect(isWellFormedAdminKey('kadm_short')).toBe(false);
    expect(isWellFormedAdminKey(randomUUID())).toBe(false);
  });

  it('are stored as the SHA-256 hex of the key as given (base64url is case-sensitive)', () => {
    const key = 'kadm_' + 'aB'.repeat(21) + 'c';
    expect(hashAdminKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashAdminKey(key)).not.toBe(hashAdminKey(key.toLowerCase()));
  });
});

describe('authenticateAdminKey', () => {
  it('accepts a stored key as Bearer, the scheme in any case, and returns its record', async () => {
    const { adminKey, record } = await createAdminKey(store, 'ops');
    expect(await authenticateAdminKey(store, `Bearer ${adminKey}`)).toEqual(record);
    expect(await authenticateAdminKey(store, `bEaReR   ${adminKey}  `)).toEqual(record);
  });

  it('says missing when there is no bearer credential at all', async () => {
    for (const header of [undefined, '', 'Bearer', 'Bearer   ', 'Basic dXNlcjpwYXNz', 'kadm_x']) expect(await refusal(header)).toBe('missing');
  });

  it('says incorrect for an unknown, malformed, case-changed or revoked admin key', async () => {
    const { adminKey, record } = await createAdminKey(store, 'ops');
    expect(await refusal(`Bearer ${generateAdminKey()}`)).toBe('incorrect');
    expect(await refusal('Bearer kadm_short')).toBe('incorrect');
    expect(await refusal('Bearer something-else')).toBe('incorrect');
    const flipped = adminKey.slice(0, 5) + [...adminKey.slice(5)].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
    if (flipped !== adminKey) expect(await refusal(`Bearer ${flipped}`)).toBe('incorrect');
    expect(await store.revokeAdminKey(record.id)).toBe(true);
    expect(await refusal(`Bearer ${adminKey}`)).toBe('incorrect');
  });

  it('says api_key for anything shaped like an API key or a client secret, without looking it up', async () => {
    const lookups: string[] = [];
    const spy = { findAdminKeyByHash: async (hash: string) => (lookups.push(hash), undefined) };
    for (const header of [`Bearer ${randomUUID()}`, `Bearer ${randomUUID().toUpperCase()}`, 'Bearer ek_abc123']) {
      const err = await authenticateAdminKey(spy, header).catch((e: AdminAuthError) => e);
      expect((err as AdminAuthError).reason).toBe('api_key');
      expect((err as AdminAuthError).message).toBe('API keys cannot use the admin endpoints; use an admin key (Authorization: Bearer kadm_…).');
    }
    expect(lookups).toEqual([]);
  });

  it('never puts the presented key in its message', async () => {
    const presented = generateAdminKey();
    const err = (await authenticateAdminKey(store, `Bearer ${presented}`).catch((e: Error) => e)) as Error;
    expect(err.message).not.toContain(presented);
    expect(err.message).not.toContain(presented.slice(5, 15));
  });
});

describe('ensureDevAdminKey', () => {
  it('creates one key on a store that never had one, and never again — not even after it is revoked', async () => {
    const first = await ensureDevAdminKey(store);
    expect(first!.record.label).toBe(DEV_ADMIN_KEY_LABEL);
    expect(await authenticateAdminKey(store, `Bearer ${first!.adminKey}`)).toEqual(first!.record);
    expect(await ensureDevAdminKey(store)).toBeNull();
    await store.revokeAdminKey(first!.record.id);
    expect(await ensureDevAdminKey(store)).toBeNull();
    expect(await store.countAdminKeys()).toBe(1);
  });
});
