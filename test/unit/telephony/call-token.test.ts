/**
 * Per-call tokens: minted claims come back intact, any change to a token or another secret is refused,
 * expiry is exact to the second, the key check follows revocation, and the stored secret survives a restart
 * and is shared by every process on the database.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CALL_TOKEN_PREFIX,
  checkCallTokenKey,
  mintCallToken,
  telephonyTokenSecret,
  verifyCallToken,
  type CallTokenGrant,
} from '../../../src/telephony/call-token.js';
import { CallTokenError } from '../../../src/telephony/errors.js';
import { normaliseCallLanguage } from '../../../src/telephony/call-settings.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';

const SECRET = 'a'.repeat(16) + 'b'.repeat(16);
const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);

const grantArb: fc.Arbitrary<CallTokenGrant> = fc.record(
  {
    accountId: fc.string({ minLength: 1, maxLength: 40 }),
    keyId: fc.string({ minLength: 1, maxLength: 40 }),
    mode: fc.constantFrom('transcription', 'relay'),
    relayUrl: fc.webUrl(),
    transcriptionLanguage: fc.constantFrom('bam', 'fra', 'eng'),
    ttsLanguage: fc.constantFrom('bam', 'fra', 'eng'),
    welcomeGreeting: fc.string({ unit: 'grapheme', maxLength: 200 }),
    interruptible: fc.constantFrom('none', 'dtmf', 'speech', 'any'),
    allowRelayOverride: fc.boolean(),
  },
  { requiredKeys: ['accountId', 'keyId', 'mode', 'transcriptionLanguage', 'ttsLanguage', 'interruptible', 'allowRelayOverride'] },
);

function failure(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    if (!(err instanceof CallTokenError)) throw err;
    return err.code;
  }
}

const sample: CallTokenGrant = {
  accountId: 'acct_1',
  keyId: 'key_1',
  mode: 'relay',
  relayUrl: 'wss://bot.example.com/ws',
  transcriptionLanguage: 'fra',
  ttsLanguage: 'fra',
  interruptible: 'speech',
  allowRelayOverride: false,
  welcomeGreeting: 'I ni ce!',
};

describe('call tokens', () => {
  it('give back exactly the claims they were minted with', () => {
    fc.assert(
      fc.property(grantArb, fc.integer({ min: 60, max: 86_400 }), (grant, ttlSeconds) => {
        const { token, claims } = mintCallToken(SECRET, { ...grant, ttlSeconds }, NOW);
        expect(token.startsWith(CALL_TOKEN_PREFIX)).toBe(true);
        expect(token).toMatch(/^kct1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
        expect(claims).toEqual({ ...grant, issuedAt: NOW / 1000, expiresAt: NOW / 1000 + ttlSeconds });
        expect(verifyCallToken(SECRET, token, NOW)).toEqual(claims);
      }),
      { numRuns: 200 },
    );
  });

  it('refuse any token changed in one character', () => {
    const { token } = mintCallToken(SECRET, { ...sample, ttlSeconds: 3600 }, NOW);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(fc.nat({ max: token.length - 1 }), fc.constantFrom(...alphabet), (at, ch) => {
        fc.pre(token[at] !== ch);
        const tampered = token.slice(0, at) + ch + token.slice(at + 1);
        expect(['malformed', 'bad_signature']).toContain(failure(() => verifyCallToken(SECRET, tampered, NOW)));
      }),
      { numRuns: 500 },
    );
  });

  it('refuse a MAC spelled differently that decodes to the same bytes', () => {
    const { token } = mintCallToken(SECRET, { ...sample, ttlSeconds: 3600 }, NOW);
    const b64url = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // The 43rd character of a 32-byte MAC carries 4 bits; its 2 low bits are spare.
    const sibling = b64url[b64url.indexOf(token.at(-1)!) ^ 1]!;
    const twin = token.slice(0, -1) + sibling;
    expect(Buffer.from(twin.split('.')[2]!, 'base64url')).toEqual(Buffer.from(token.split('.')[2]!, 'base64url'));
    expect(failure(() => verifyCallToken(SECRET, twin, NOW))).toBe('bad_signature');
  });

  it('refuse a payload re-signed without the secret, and a token minted with another secret', () => {
    const { token } = mintCallToken(SECRET, { ...sample, ttlSeconds: 3600 }, NOW);
    const [, payload, mac] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8'));
    const forged = `${CALL_TOKEN_PREFIX}${Buffer.from(JSON.stringify({ ...claims, a: 'acct_other' })).toString('base64url')}.${mac}`;
    expect(failure(() => verifyCallToken(SECRET, forged, NOW))).toBe('bad_signature');
    const other = mintCallToken('c'.repeat(32), { ...sample, ttlSeconds: 3600 }, NOW).token;
    expect(failure(() => verifyCallToken(SECRET, other, NOW))).toBe('bad_signature');
  });

  it('expire at their expiry second, not before', () => {
    const { token, claims } = mintCallToken(SECRET, { ...sample, ttlSeconds: 60 }, NOW);
    expect(verifyCallToken(SECRET, token, claims.expiresAt * 1000 - 1)).toEqual(claims);
    expect(failure(() => verifyCallToken(SECRET, token, claims.expiresAt * 1000))).toBe('expired');
  });

  it('refuse what is not a token as malformed', () => {
    const { token } = mintCallToken(SECRET, { ...sample, ttlSeconds: 60 }, NOW);
    for (const bad of [
      '',
      'kct1.',
      'kct1..',
      token.replace('kct1.', 'kct2.'),
      token.split('.').slice(0, 2).join('.'),
      `${token}=`,
      `kct1.${'A'.repeat(10_000)}.x`,
      'Bearer x',
      'kct1.a b.c',
    ]) {
      expect(
        failure(() => verifyCallToken(SECRET, bad, NOW)),
        bad.slice(0, 40),
      ).toMatch(/malformed|bad_signature/);
    }
    expect(failure(() => verifyCallToken(SECRET, 42 as unknown as string, NOW))).toBe('malformed');
  });
});

describe('call languages', () => {
  it('normalise Kuma codes and ConversationRelay tags to bam, fra or eng', () => {
    const cases: [string, string | undefined][] = [
      ['bam', 'bam'],
      ['bm-ML', 'bam'],
      ['BM', 'bam'],
      ['fra', 'fra'],
      ['fr-FR', 'fra'],
      ['fr_CA', 'fra'],
      ['fra_Latn', 'fra'],
      ['eng', 'eng'],
      ['en-US', 'eng'],
      ['en-GB', 'eng'],
      ['de-DE', undefined],
      ['', undefined],
      ['constructor', undefined],
      ['__proto__', undefined],
    ];
    for (const [tag, expected] of cases) expect(normaliseCallLanguage(tag), tag).toBe(expected);
  });
});

describe('the secret and the key check', () => {
  let dir: string;
  let store: Store;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-calltoken-'));
    store = await openSqliteStore(path.join(dir, 'kuma.sqlite'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is the configured secret when set, refusing one under 32 bytes', async () => {
    expect(await telephonyTokenSecret(SECRET, store)).toBe(SECRET);
    await expect(telephonyTokenSecret('short', store)).rejects.toThrow(/32 bytes/);
  });

  it('is otherwise made once, kept across restarts and shared by every process on the database', async () => {
    const first = await telephonyTokenSecret('', store);
    expect(Buffer.byteLength(first)).toBeGreaterThanOrEqual(32);
    const other = await openSqliteStore(path.join(dir, 'kuma.sqlite'));
    try {
      expect(await telephonyTokenSecret('', other)).toBe(first);
    } finally {
      await other.close();
    }
    await store.close();
    store = await openSqliteStore(path.join(dir, 'kuma.sqlite'));
    expect(await telephonyTokenSecret('', store)).toBe(first);
  });

  it('refuses a token whose key was revoked, is unknown, or belongs to another account', async () => {
    const account = await store.createAccount('a', 1_000_000);
    const key = await store.createKey(account.id, 'hash-1', 'k');
    await expect(checkCallTokenKey(store, { accountId: account.id, keyId: key.id })).resolves.toBeUndefined();
    await expect(checkCallTokenKey(store, { accountId: 'acct_other', keyId: key.id })).rejects.toMatchObject({ code: 'key_revoked' });
    await expect(checkCallTokenKey(store, { accountId: account.id, keyId: 'key_missing' })).rejects.toMatchObject({ code: 'key_revoked' });
    await store.revokeKey(key.id);
    await expect(checkCallTokenKey(store, { accountId: account.id, keyId: key.id })).rejects.toMatchObject({ code: 'key_revoked' });
  });
});
