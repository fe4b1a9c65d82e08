/**
 * The openai SDKs (v4, v5, v6, v7) against Kuma's 429: with maxRetries 0 it surfaces as their
 * RateLimitError carrying the envelope and headers; with maxRetries 1 the SDK waits the Retry-After
 * delay (1 s here, longer than its own first backoff of at most 0.5 s) and retries.
 */
import OpenAI6 from 'openai';
import OpenAI4 from 'openai4';
import OpenAI5 from 'openai5';
import OpenAI7 from 'openai7';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

let t: TestServer;
let nowMs = 0;
beforeAll(async () => {
  t = await startTestServer({ config: { rateLimits: true }, rateLimitClock: () => nowMs });
  // 60 a minute: one request empties the bucket, and the next is available after exactly 1 s.
  await t.server.store.setRateLimits(t.accountId, { requestsPerMinute: 60 });
});
afterAll(() => t.close());

type Client = { models: { list(): PromiseLike<unknown> } };
type Sdk = new (options: { apiKey: string; baseURL: string; maxRetries: number; fetch?: unknown }) => Client;
const SDKS: [string, Sdk, { RateLimitError: new (...args: never[]) => Error }][] = [
  ['openai v4', OpenAI4 as unknown as Sdk, OpenAI4],
  ['openai v5', OpenAI5 as unknown as Sdk, OpenAI5],
  ['openai v6', OpenAI6 as unknown as Sdk, OpenAI6],
  ['openai v7', OpenAI7 as unknown as Sdk, OpenAI7],
];

/** A fresh, empty bucket: a new minute of the injected clock has refilled it, then one request takes it. */
async function emptyBucket(): Promise<void> {
  nowMs += 120_000;
  const res = await fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } });
  expect(res.status).toBe(200);
  for (let i = 0; i < 59; i++) await fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } }).then((r) => r.text());
}

describe.each(SDKS)('%s', (_name, Sdk, ns) => {
  it('maxRetries 0: a RateLimitError with status 429, code rate_limit_exceeded and Retry-After', async () => {
    await emptyBucket();
    const client = new Sdk({ apiKey: t.apiKey, baseURL: `${t.baseUrl}/openai/v1`, maxRetries: 0 });
    const err = (await Promise.resolve(client.models.list()).catch((e: unknown) => e)) as Error & {
      status: number;
      code: string;
      type: string;
      headers: Headers | Record<string, string>;
    };
    expect(err).toBeInstanceOf(ns.RateLimitError);
    expect(err.status).toBe(429);
    expect(err.code).toBe('rate_limit_exceeded');
    expect(err.type).toBe('requests');
    const header = (name: string) => (err.headers instanceof Headers ? err.headers.get(name) : err.headers[name]);
    expect(header('retry-after')).toBe('1');
    expect(header('x-ratelimit-remaining-requests')).toBe('0');
  });

  it('maxRetries 1: waits the Retry-After delay, then retries and succeeds', async () => {
    await emptyBucket();
    const attempts: { at: number; status: number }[] = [];
    const fetchAndTick = async (url: string, init: RequestInit) => {
      const started = performance.now();
      const res = await fetch(url, init);
      attempts.push({ at: started, status: res.status });
      // The server's clock moves as the real one would over the Retry-After delay.
      if (res.status === 429) nowMs += 1000;
      return res;
    };
    const client = new Sdk({ apiKey: t.apiKey, baseURL: `${t.baseUrl}/openai/v1`, maxRetries: 1, fetch: fetchAndTick });
    await client.models.list();
    expect(attempts.map((a) => a.status)).toEqual([429, 200]);
    // The SDK's own first backoff is at most 0.5 s: a wait of ≥ 1 s is the Retry-After header's.
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
  });
});
