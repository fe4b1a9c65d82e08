/**
 * Auth refuses credentials with its own error (auth knows nothing of HTTP), and src/api/errors.ts answers
 * each refusal exactly as clients have always seen it: 401, `invalid_api_key`, `authentication_error`, the
 * same message, no param, no extra headers — for API keys and for client secrets alike.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, toApiError } from '../../../src/api/errors.js';
import { authenticateApiKey, generateApiKey, hashApiKey, INCORRECT_KEY_MESSAGE, MISSING_KEY_MESSAGE } from '../../../src/auth/api-keys.js';
import { mintClientSecret, redeemClientSecret } from '../../../src/auth/client-secrets.js';
import { CredentialError, type CredentialFailure } from '../../../src/auth/errors.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';

let dir: string;
let store: Store;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-credentials-'));
  store = await openSqliteStore(path.join(dir, 'kuma.sqlite'));
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function refusal(attempt: Promise<unknown>): Promise<unknown> {
  return attempt.then(
    () => expect.unreachable('the credential was accepted'),
    (err: unknown) => err,
  );
}

function expectCredentialRefusal(err: unknown, reason: CredentialFailure, message: string | RegExp): void {
  // Auth's own error, not an HTTP one…
  expect(err).toBeInstanceOf(CredentialError);
  expect(err).not.toBeInstanceOf(ApiError);
  expect(err).toMatchObject({ reason, code: 'invalid_api_key' });
  // …answered by the API layer as it always was.
  const answered = toApiError(err);
  expect(answered).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'authentication_error', param: null, headers: {} });
  expect(answered.message).toMatch(message);
  expect(answered.message).toBe((err as Error).message);
}

describe('API keys', () => {
  it('a missing key, a malformed one, an unknown one and a revoked one are CredentialErrors answered 401 invalid_api_key', async () => {
    expectCredentialRefusal(await refusal(authenticateApiKey(store, undefined)), 'missing_key', MISSING_KEY_MESSAGE);
    expectCredentialRefusal(await refusal(authenticateApiKey(store, 'sk-not-a-uuid')), 'incorrect_key', INCORRECT_KEY_MESSAGE);
    expectCredentialRefusal(await refusal(authenticateApiKey(store, generateApiKey())), 'incorrect_key', INCORRECT_KEY_MESSAGE);
    const account = await store.createAccount('acct', 1_000_000);
    const apiKey = generateApiKey();
    const key = await store.createKey(account.id, hashApiKey(apiKey), 'k');
    await store.revokeKey(key.id);
    expectCredentialRefusal(await refusal(authenticateApiKey(store, apiKey)), 'incorrect_key', INCORRECT_KEY_MESSAGE);
  });
});

describe('client secrets', () => {
  it('an unknown, a used, an expired secret and one whose key was revoked are CredentialErrors answered 401 invalid_api_key', async () => {
    const account = await store.createAccount('acct', 1_000_000);
    const apiKey = generateApiKey();
    const key = await store.createKey(account.id, hashApiKey(apiKey), 'k');
    const caller = await authenticateApiKey(store, apiKey);
    const grant = { shape: 'ga' as const, session: {}, ttlSeconds: 60 };

    expectCredentialRefusal(await refusal(redeemClientSecret(store, 'ek_unknown')), 'invalid_client_secret', /^Invalid or already used client secret/);

    const used = await mintClientSecret(store, caller, grant);
    await redeemClientSecret(store, used.value);
    expectCredentialRefusal(await refusal(redeemClientSecret(store, used.value)), 'invalid_client_secret', /^Invalid or already used client secret/);

    const now = Date.now();
    const expiring = await mintClientSecret(store, caller, grant, now);
    expectCredentialRefusal(await refusal(redeemClientSecret(store, expiring.value, now + 61_000)), 'expired_client_secret', /^This client secret has expired/);

    const orphaned = await mintClientSecret(store, caller, grant);
    await store.revokeKey(key.id);
    expectCredentialRefusal(await refusal(redeemClientSecret(store, orphaned.value)), 'invalid_client_secret', /^Invalid or already used client secret/);
  });
});
