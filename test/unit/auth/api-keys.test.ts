/**
 * API keys: generation and shape, hashing (and that only hashes reach the database), header extraction,
 * and authentication including revoked, unknown, malformed and missing keys.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, toApiError } from '../../../src/api/errors.js';
import {
  authenticateApiKey,
  extractApiKey,
  generateApiKey,
  hashApiKey,
  INCORRECT_KEY_MESSAGE,
  isWellFormedApiKey,
  MISSING_KEY_MESSAGE,
} from '../../../src/auth/api-keys.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';

let dir: string;
let dbPath: string;
let store: Store;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-keys-'));
  dbPath = path.join(dir, 'kuma.sqlite');
  store = await openSqliteStore(dbPath);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function issueKey(label = 'test') {
  const account = await store.createAccount('acct', 1_000_000);
  const apiKey = generateApiKey();
  const key = await store.createKey(account.id, hashApiKey(apiKey), label);
  return { account, key, apiKey };
}

async function expectInvalidKey(presented: string | undefined, message: string) {
  const error = await authenticateApiKey(store, presented).catch((e: unknown) => toApiError(e));
  expect(error).toBeInstanceOf(ApiError);
  expect(error).toMatchObject({ code: 'invalid_api_key', status: 401, message });
  if (presented?.trim()) expect((error as ApiError).message).not.toContain(presented.trim());
}

const NO_OVERRIDES = { requestsPerMinute: null, tokensPerMinute: null, concurrent: null };

describe('generateApiKey / isWellFormedApiKey / hashApiKey', () => {
  it('generates distinct UUID keys', () => {
    const keys = new Set(Array.from({ length: 100 }, generateApiKey));
    expect(keys.size).toBe(100);
    for (const k of keys) expect(isWellFormedApiKey(k)).toBe(true);
  });

  it('accepts UUIDs in either case and rejects anything else', () => {
    const k = generateApiKey();
    expect(isWellFormedApiKey(k.toUpperCase())).toBe(true);
    for (const bad of ['', 'sk-abc', `${k}x`, ` ${k}`, k.replace(/-/g, ''), 'g'.repeat(8) + k.slice(8)]) {
      expect(isWellFormedApiKey(bad)).toBe(false);
    }
  });

  it('hashes to lower-case sha256 hex, the same for both spellings of a key', () => {
    const k = generateApiKey();
    expect(hashApiKey(k)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(k.toUpperCase())).toBe(hashApiKey(k));
    expect(hashApiKey(generateApiKey())).not.toBe(hashApiKey(k));
  });
});

describe('extractApiKey', () => {
  const k = '6f1c2b9e-3a4d-4e5f-8a7b-1c2d3e4f5a6b';

  it('reads Authorization: Bearer in any case, trimmed', () => {
    expect(extractApiKey({ authorization: `Bearer ${k}` })).toBe(k);
    expect(extractApiKey({ authorization: `  bearer   ${k}  ` })).toBe(k);
    expect(extractApiKey({ authorization: `BEARER ${k}` })).toBe(k);
  });

  it('reads x-api-key, trimmed', () => {
    expect(extractApiKey({ 'x-api-key': ` ${k} ` })).toBe(k);
  });

  it('prefers Authorization and falls back to x-api-key when Authorization is not Bearer', () => {
    expect(extractApiKey({ authorization: `Bearer ${k}`, 'x-api-key': 'other' })).toBe(k);
    expect(extractApiKey({ authorization: 'Basic dXNlcjpwYXNz', 'x-api-key': k })).toBe(k);
  });

  it('returns undefined when nothing usable is present', () => {
    expect(extractApiKey({})).toBeUndefined();
    expect(extractApiKey({ authorization: 'Bearer   ' })).toBeUndefined();
    expect(extractApiKey({ authorization: 'Basic abc' })).toBeUndefined();
    expect(extractApiKey({ 'x-api-key': '   ' })).toBeUndefined();
  });
});

describe('authenticateApiKey', () => {
  it('resolves a valid key to its account and key record, in either case', async () => {
    const { account, key, apiKey } = await issueKey();
    const limits = { account: NO_OVERRIDES, key: NO_OVERRIDES };
    expect(await authenticateApiKey(store, apiKey)).toEqual({ account, key, limits });
    expect(await authenticateApiKey(store, apiKey.toUpperCase())).toEqual({ account, key, limits });
  });

  it('refuses a revoked key like an unknown one', async () => {
    const { key, apiKey } = await issueKey();
    await store.revokeKey(key.id);
    await expectInvalidKey(apiKey, INCORRECT_KEY_MESSAGE);
  });

  it('refuses an unknown well-formed key', async () => {
    await issueKey();
    await expectInvalidKey(generateApiKey(), INCORRECT_KEY_MESSAGE);
  });

  it('tells a missing key apart from an incorrect one', async () => {
    await expectInvalidKey(undefined, MISSING_KEY_MESSAGE);
    await expectInvalidKey('   ', MISSING_KEY_MESSAGE);
    expect(MISSING_KEY_MESSAGE).toMatch(/^You didn't provide an API key/);
    expect(INCORRECT_KEY_MESSAGE).toMatch(/^Incorrect API key provided\./);
  });

  it('rejects a malformed key without a database lookup', async () => {
    const lookup = vi.spyOn(store, 'findKeyByHash');
    await expectInvalidKey('sk-not-a-uuid-secret-value', INCORRECT_KEY_MESSAGE);
    expect(lookup).not.toHaveBeenCalled();
    await expectInvalidKey(generateApiKey(), INCORRECT_KEY_MESSAGE);
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('rejects a store match whose hash differs (constant-time re-check)', async () => {
    const { account, key, apiKey } = await issueKey();
    const looseStore: Store = {
      ...store,
      findKeyByHash: async () => ({ key, keyHash: 'f'.repeat(64), account, limits: { account: NO_OVERRIDES, key: NO_OVERRIDES } }),
    };
    await expect(authenticateApiKey(looseStore, apiKey)).rejects.toMatchObject({ code: 'invalid_api_key' });
  });
});

describe('storage', () => {
  it('stores the hash, never the key: neither the table nor the raw file bytes contain it', async () => {
    const { account, apiKey } = await issueKey();
    const [row] = await store.listKeys(account.id);
    expect(JSON.stringify(row)).not.toContain(apiKey);
    expect((await store.findKeyByHash(hashApiKey(apiKey)))?.keyHash).toBe(hashApiKey(apiKey));

    // Read the database file and its WAL while the store is still open, then again after the checkpoint on close.
    const rawBytes = () =>
      readdirSync(dir)
        .map((f) => readFileSync(path.join(dir, f)).toString('latin1'))
        .join('');
    for (const phase of ['open', 'closed']) {
      if (phase === 'closed') await store.close();
      const bytes = rawBytes();
      expect(bytes).toContain(hashApiKey(apiKey));
      expect(bytes).not.toContain(apiKey);
      expect(bytes).not.toContain(apiKey.toUpperCase());
      expect(bytes).not.toContain(apiKey.replace(/-/g, ''));
    }
  });
});
