/**
 * The webhook signature scheme and the retry arithmetic, as pure functions: what an integrator's
 * verification accepts and refuses, and the waits between attempts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signWebhook, verifyWebhookSignature } from '../../../../src/telephony/webhooks/signature.js';
import { DEFAULT_RETRY, outcomeOfStatus, parseRetryAfter, retryDelayMs } from '../../../../src/telephony/webhooks/retry-policy.js';

const NOW = 1_760_000_000;

describe('verifyWebhookSignature', () => {
  it('accepts what signWebhook produced, for any secret and body, and refuses any changed byte', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.uint8Array({ minLength: 1, maxLength: 512 }), fc.nat(), (secret, body, flipAt) => {
        const header = signWebhook(secret, body, NOW);
        expect(verifyWebhookSignature(secret, header, body, NOW)).toEqual({ valid: true, timestamp: NOW });
        const tampered = Uint8Array.from(body);
        tampered[flipAt % body.length]! ^= 1;
        expect(verifyWebhookSignature(secret, header, tampered, NOW)).toEqual({ valid: false, reason: 'mismatch' });
        expect(verifyWebhookSignature(`${secret}x`, header, body, NOW)).toEqual({ valid: false, reason: 'mismatch' });
      }),
    );
  });

  it('refuses a timestamp outside the tolerance, and one moved to look fresh', () => {
    const secret = newWebhookSecret();
    const body = '{"id":"evt_1"}';
    const header = signWebhook(secret, body, NOW);
    expect(verifyWebhookSignature(secret, header, body, NOW + 300)).toMatchObject({ valid: true });
    expect(verifyWebhookSignature(secret, header, body, NOW + 301)).toEqual({ valid: false, reason: 'expired' });
    expect(verifyWebhookSignature(secret, header, body, NOW + 3600, 7200)).toMatchObject({ valid: true });
    // An attacker replaying an old request cannot refresh t: the signature covers it.
    const replayed = header.replace(`t=${NOW}`, `t=${NOW + 1000}`);
    expect(verifyWebhookSignature(secret, replayed, body, NOW + 1000)).toEqual({ valid: false, reason: 'mismatch' });
  });

  it('refuses missing or malformed headers, and accepts any of several v1 entries', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    for (const bad of [undefined, '', 'v1=abc', `t=${NOW}`, `t=x,v1=${'0'.repeat(64)}`, 'garbage']) {
      expect(verifyWebhookSignature(secret, bad, 'x', NOW)).toEqual({ valid: false, reason: 'malformed' });
    }
    const good = signWebhook(secret, 'x', NOW).split(',v1=')[1]!;
    expect(verifyWebhookSignature(secret, `t=${NOW},v1=${'0'.repeat(64)},v1=${good}`, 'x', NOW)).toMatchObject({ valid: true });
  });
});

describe('retry policy', () => {
  it('retries network-like statuses, gives up on other 4xx and on redirects', () => {
    expect(outcomeOfStatus(204, null)).toEqual({ kind: 'delivered', status: 204 });
    for (const status of [408, 429, 500, 502, 503, 504]) expect(outcomeOfStatus(status, null).kind).toBe('retry');
    for (const status of [301, 302, 400, 401, 403, 404, 410, 422]) expect(outcomeOfStatus(status, null).kind).toBe('reject');
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(outcomeOfStatus(429, '2', now)).toEqual({ kind: 'retry', reason: 'status 429', retryAfterMs: 2000 });
  });

  it('waits between half and all of the exponential step, at least what Retry-After asked up to its cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        fc.option(fc.nat(10_000_000), { nil: undefined }),
        (attempt, r, asked) => {
          const step = Math.min(DEFAULT_RETRY.maxDelayMs, DEFAULT_RETRY.baseDelayMs * 2 ** (attempt - 1));
          const delay = retryDelayMs(attempt, DEFAULT_RETRY, asked, () => r);
          const floor = Math.max(Math.floor(step / 2), asked === undefined ? 0 : Math.min(asked, DEFAULT_RETRY.retryAfterCapMs));
          expect(delay).toBeGreaterThanOrEqual(floor);
          expect(delay).toBeLessThanOrEqual(Math.max(step, DEFAULT_RETRY.retryAfterCapMs));
        },
      ),
    );
  });
});
