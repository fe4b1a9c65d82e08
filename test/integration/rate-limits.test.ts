/**
 * Per-key and per-account limits through the HTTP API: 429 rate_limit_exceeded with Retry-After, the
 * x-ratelimit-* headers on every kind of authenticated response, refusals that use no slot, amounts
 * charged at settlement, and in-flight places released exactly once however a response ends. The
 * limiter's clock is injected, so buckets refill when the test says so, never by waiting.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RouteDef } from '../../src/api/types.js';
import { parseDuration } from '../../src/limits/duration.js';
import { meteredProbeRoute } from '../fixtures/metered-probe-route.js';
import { authed, startTestServer, type TestServer } from '../helpers/test-server.js';
import { chargesSettled } from '../helpers/settled.js';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

let nowMs = 1_000_000;
const clock = () => nowMs;

/** Authenticated probes of every result kind; `hold` streams until the client leaves, `fail` errors midway. */
function probes(): RouteDef[] {
  const route = (path: string, handler: RouteDef['handler']): RouteDef => ({ method: 'GET', path, surface: 'compat', auth: true, handler });
  return [
    route('/test/text', async () => ({ kind: 'text', body: 'hello', contentType: 'text/plain' })),
    route('/test/sse', async () => ({
      kind: 'sse',
      events: (async function* () {
        yield { data: '{"a":1}' };
        yield { data: '[DONE]' };
      })(),
    })),
    route('/test/bytes', async () => ({
      kind: 'bytes',
      contentType: 'audio/pcm',
      chunks: (async function* () {
        yield new Uint8Array([1, 2]);
      })(),
    })),
    route('/test/hold', async (req) => ({
      kind: 'bytes',
      contentType: 'audio/pcm',
      chunks: (async function* () {
        yield new Uint8Array(16);
        await new Promise((resolve) => req.signal.addEventListener('abort', resolve, { once: true }));
      })(),
    })),
    route('/test/fail', async () => ({
      kind: 'sse',
      events: (async function* () {
        yield { data: '{"a":1}' };
        throw new Error('stream broke');
      })(),
    })),
  ];
}

async function start(options: { balanceMicros?: number } = {}) {
  nowMs = 1_000_000;
  t = await startTestServer({
    config: { rateLimits: true, accountRequestsPerMinute: 0, accountTokensPerMinute: 0, accountConcurrent: 0 },
    rateLimitClock: clock,
    balanceMicros: options.balanceMicros,
    extraRoutes: ({ ledger }) => [...probes(), meteredProbeRoute(ledger)],
  });
  return t;
}

const get = (path: string, apiKey = t!.apiKey, init: RequestInit = {}) => fetch(t!.baseUrl + path, authed(apiKey, init));
const limitHeaders = (res: Response) => ({
  limit: res.headers.get('x-ratelimit-limit-requests'),
  remaining: res.headers.get('x-ratelimit-remaining-requests'),
  reset: res.headers.get('x-ratelimit-reset-requests'),
});

/** Waits (bounded) until the limiter has nothing in flight for the subject: release follows the response's end. */
async function settled(subjectId: string): Promise<void> {
  for (let i = 0; i < 500 && t!.server.limiter!.inFlight(subjectId) !== 0; i++) await new Promise((r) => setTimeout(r, 10));
  expect(t!.server.limiter!.inFlight(subjectId)).toBe(0);
}

describe('browsers', () => {
  it('may read every x-ratelimit-* header and Retry-After: each is named in Access-Control-Expose-Headers', async () => {
    await start();
    await t!.server.store.setRateLimits(t!.accountId, { requestsPerMinute: 1, tokensPerMinute: 100 });
    const origin = { headers: { origin: 'https://app.example' } };
    const admitted = await get('/openai/v1/models', t!.apiKey, origin);
    const refused = await get('/openai/v1/models', t!.apiKey, origin);
    expect([admitted.status, refused.status]).toEqual([200, 429]);
    for (const res of [admitted, refused]) {
      await res.arrayBuffer();
      const exposed = (res.headers.get('access-control-expose-headers') ?? '').split(/\s*,\s*/);
      const limits = [...res.headers.keys()].filter((name) => name.startsWith('x-ratelimit-'));
      expect(limits.length).toBe(6); // requests and tokens: limit, remaining, reset
      for (const name of [...limits, 'x-request-id']) expect(exposed).toContain(name);
    }
    expect(refused.headers.get('access-control-expose-headers')!.split(/\s*,\s*/)).toContain('retry-after');
  });
});

describe('requests per minute', () => {
  it('per account: headers count down, the next request gets 429 with Retry-After, and the refill readmits it', async () => {
    await start();
    await t!.server.store.setRateLimits(t!.accountId, { requestsPerMinute: 2 });
    const first = await get('/openai/v1/models');
    expect(first.status).toBe(200);
    expect(limitHeaders(first)).toEqual({ limit: '2', remaining: '1', reset: '30s' });
    const second = await get('/openai/v1/models');
    expect(limitHeaders(second)).toEqual({ limit: '2', remaining: '0', reset: '1m0s' });

    const refused = await get('/openai/v1/models');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(refused.headers.get('x-request-id')).toMatch(/^req_/);
    expect(limitHeaders(refused)).toEqual({ limit: '2', remaining: '0', reset: '1m0s' });
    const body = (await refused.json()) as { error: { code: string; type: string; message: string; param: null } };
    expect(body.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'requests', param: null });
    expect(body.error.message).toContain(`account ${t!.accountId}`);

    // A refusal used no slot: after 30 s exactly one request is available again, not zero.
    nowMs += 30_000;
    expect((await get('/openai/v1/models')).status).toBe(200);
    expect((await get('/openai/v1/models')).status).toBe(429);
  });

  it('per account: the account limit counts all its keys together', async () => {
    await start();
    const second = await t!.server.store.createKey(
      t!.accountId,
      (await import('../../src/auth/api-keys.js')).hashApiKey('0b0e2f66-3c3a-4f6e-9d59-6f7d7d1c2a11'),
      'second',
    );
    expect(second.accountId).toBe(t!.accountId);
    await t!.server.store.setRateLimits(t!.accountId, { requestsPerMinute: 2 });
    expect((await get('/openai/v1/models')).status).toBe(200);
    expect((await get('/openai/v1/models', '0b0e2f66-3c3a-4f6e-9d59-6f7d7d1c2a11')).status).toBe(200);
    expect((await get('/openai/v1/models')).status).toBe(429);
    expect((await get('/openai/v1/models', '0b0e2f66-3c3a-4f6e-9d59-6f7d7d1c2a11')).status).toBe(429);
    // Another account is not affected.
    const other = await t!.newAccount(1_000_000);
    expect((await get('/openai/v1/models', other.apiKey)).status).toBe(200);
  });

  it('per key: one key over its own limit is refused while another key of the account goes on; headers report the tighter limit', async () => {
    await start();
    await t!.server.store.setRateLimits(t!.accountId, { requestsPerMinute: 10 });
    await t!.server.store.setRateLimits(t!.keyId, { requestsPerMinute: 1 });
    const first = await get('/openai/v1/models');
    expect(limitHeaders(first)).toEqual({ limit: '1', remaining: '0', reset: '1m0s' });
    const refused = await get('/openai/v1/models');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(`key ${t!.keyId}`);

    const { hashApiKey } = await import('../../src/auth/api-keys.js');
    const otherKey = 'c7b1f7a2-5d0e-4b8e-8f3a-2b9c1d0e4f55';
    await t!.server.store.createKey(t!.accountId, hashApiKey(otherKey), 'other');
    const other = await get('/openai/v1/models', otherKey);
    expect(other.status).toBe(200);
    // The account's bucket: 10, minus the first key's 1 admitted request, minus this one.
    expect(limitHeaders(other)).toEqual({ limit: '10', remaining: '8', reset: '12s' });
  });
});

describe('per-minute amount', () => {
  it('is charged when the work settles, and a bucket in debt refuses until the refill pays it back', async () => {
    await start();
    await t!.server.store.setRateLimits(t!.accountId, { tokensPerMinute: 10 });
    const post = (seconds: number) =>
      get('/openai/v1/test/metered', t!.apiKey, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ seconds }) });
    const first = await post(12);
    expect(first.status).toBe(200);
    // The headers go out with the status line, before the work is counted.
    expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('10');
    expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe('10');

    const refused = await post(1);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe('tokens');
    // 2 units of debt at 10 a minute: 12 s pay it back, and only a bucket with something left admits: 13 s.
    expect(refused.headers.get('retry-after')).toBe('13');
    expect(refused.headers.get('x-ratelimit-remaining-tokens')).toBe('0');
    expect(parseDuration(refused.headers.get('x-ratelimit-reset-tokens')!)).toBe(72_000);
    // Refused before any work: the ledger recorded only the first request.
    await chargesSettled(t!); // charged once the answer was delivered
    expect(await t!.server.store.listUsage({ accountId: t!.accountId })).toHaveLength(1);

    nowMs += 12_001;
    expect((await post(1)).status).toBe(200);
  });
});

describe('concurrent requests', () => {
  it('a streamed response holds its place until the client leaves; the place comes back exactly once', async () => {
    await start();
    await t!.server.store.setRateLimits(t!.accountId, { concurrent: 1 });
    const holder = new AbortController();
    const held = await get('/openai/v1/test/hold', t!.apiKey, { signal: holder.signal });
    expect(held.status).toBe(200);
    await held.body!.getReader().read(); // the first chunk arrived: the stream is in flight

    const refused = await get('/openai/v1/models');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/concurrent requests/);

    holder.abort();
    await settled(t!.accountId);
    // Released once, not twice: with one stream open again, a second request is still refused.
    const again = new AbortController();
    const held2 = await get('/openai/v1/test/hold', t!.apiKey, { signal: again.signal });
    await held2.body!.getReader().read();
    expect((await get('/openai/v1/models')).status).toBe(429);
    again.abort();
    await settled(t!.accountId);
    expect((await get('/openai/v1/models')).status).toBe(200);
  });

  it('a stream that fails midway, a 4xx and a whole response each release their place', async () => {
    await start();
    await t!.server.store.setRateLimits(t!.accountId, { concurrent: 1 });
    const failed = await get('/openai/v1/test/fail');
    expect(await failed.text()).toContain('server_error');
    await settled(t!.accountId);
    expect((await get('/openai/v1/models/no-such-model')).status).toBe(404);
    await settled(t!.accountId);
    for (let i = 0; i < 5; i++) expect((await get('/openai/v1/models')).status).toBe(200);
    await settled(t!.accountId);
  });
});

describe('headers on every authenticated response', () => {
  it('JSON, text, SSE, bytes, 4xx, 402 and 429 all carry x-ratelimit-* for both dimensions', async () => {
    await start({ balanceMicros: 0 });
    await t!.server.store.setRateLimits(t!.accountId, { requestsPerMinute: 8, tokensPerMinute: 100 });
    const responses = [
      await get('/openai/v1/models'),
      await get('/openai/v1/test/text'),
      await get('/openai/v1/test/sse'),
      await get('/openai/v1/test/bytes'),
      await get('/openai/v1/models/no-such-model'),
      await get('/openai/v1/chat/completions', t!.apiKey, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 404, 402]);
    responses.forEach((res, i) => {
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('8');
      expect(res.headers.get('x-ratelimit-remaining-requests')).toBe(String(7 - i));
      expect(res.headers.get('x-ratelimit-limit-tokens')).toBe('100');
      expect(res.headers.get('x-ratelimit-remaining-tokens')).toBe('100');
      expect(parseDuration(res.headers.get('x-ratelimit-reset-tokens')!)).toBe(0);
      expect(parseDuration(res.headers.get('x-ratelimit-reset-requests')!)).toBe((i + 1) * 7500);
    });
    await Promise.all(responses.map((r) => r.text()));
    expect((await get('/openai/v1/models')).status).toBe(200);
    expect((await get('/openai/v1/models')).status).toBe(200);
    const refused = await get('/openai/v1/models');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    // Unauthenticated routes and failed authentication carry none.
    const health = await fetch(t!.baseUrl + '/healthz');
    expect(health.headers.get('x-ratelimit-limit-requests')).toBeNull();
    const badKey = await fetch(t!.baseUrl + '/openai/v1/models', { headers: { authorization: 'Bearer nope' } });
    expect(badKey.status).toBe(401);
    expect(badKey.headers.get('x-ratelimit-limit-requests')).toBeNull();
  });

  it('an unlimited key and account get no headers, and KUMA_RATE_LIMITS=off disables every limit', async () => {
    await start();
    const res = await get('/openai/v1/models');
    expect(res.headers.get('x-ratelimit-limit-requests')).toBeNull();
    await t!.close();
    t = await startTestServer({ config: { rateLimits: false, accountRequestsPerMinute: 1 } });
    expect(t.server.limiter).toBeNull();
    for (let i = 0; i < 3; i++) {
      const r = await get('/openai/v1/models');
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit-requests')).toBeNull();
    }
  });
});
