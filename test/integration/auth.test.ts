/** Authentication and the balance gate over HTTP: both headers, every way a key can be wrong, 402, and no key in the logs. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { meteredProbeRoute } from '../fixtures/metered-probe-route.js';
import { createAdminKey } from '../helpers/admin.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ extraRoutes: ({ ledger }) => [meteredProbeRoute(ledger)] });
});
afterAll(() => t.close());

async function expectEnvelope(res: Response, status: number, type: string, code: string | null, param: string | null = null) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/json');
  const body = (await res.json()) as any;
  expect(body.error).toMatchObject({ type, code, param });
  expect(typeof body.error.message).toBe('string');
  return body.error as { message: string };
}

describe('authentication', () => {
  it('accepts Authorization: Bearer', async () => {
    const res = await fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(res.status).toBe(200);
  });

  it('accepts x-api-key', async () => {
    const res = await fetch(`${t.baseUrl}/compat/v1/models`, { headers: { 'x-api-key': t.apiKey } });
    expect(res.status).toBe(200);
  });

  it('accepts a lower-case bearer scheme and an upper-case key', async () => {
    const res = await fetch(`${t.baseUrl}/compat/v1/models`, { headers: { authorization: `bearer ${t.apiKey.toUpperCase()}` } });
    expect(res.status).toBe(200);
  });

  it('a missing key is 401 invalid_api_key', async () => {
    const err = await expectEnvelope(await fetch(`${t.baseUrl}/compat/v1/models`), 401, 'authentication_error', 'invalid_api_key');
    expect(err.message).toMatch(/didn't provide an API key/);
  });

  it('a malformed key is 401 invalid_api_key', async () => {
    for (const header of ['Bearer not-a-uuid', 'Bearer ', 'Basic abc', `Bearer ${t.apiKey}x`]) {
      await expectEnvelope(
        await fetch(`${t.baseUrl}/compat/v1/models`, { headers: { authorization: header } }),
        401,
        'authentication_error',
        'invalid_api_key',
      );
    }
  });

  it('a well-formed but unknown key is 401', async () => {
    const res = await fetch(`${t.baseUrl}/compat/v1/models`, { headers: { authorization: `Bearer ${crypto.randomUUID()}` } });
    await expectEnvelope(res, 401, 'authentication_error', 'invalid_api_key');
  });

  it('an admin key is not an API key: 401 invalid_api_key like any incorrect key, under either header', async () => {
    const { adminKey } = await createAdminKey(t.server.store);
    for (const headers of [{ authorization: `Bearer ${adminKey}` }, { 'x-api-key': adminKey }] as Record<string, string>[]) {
      await expectEnvelope(await fetch(`${t.baseUrl}/compat/v1/models`, { headers }), 401, 'authentication_error', 'invalid_api_key');
    }
  });

  it('a revoked key is 401', async () => {
    const other = await t.newAccount(1_000_000);
    expect((await fetch(`${t.baseUrl}/compat/v1/models`, { headers: { 'x-api-key': other.apiKey } })).status).toBe(200);
    expect(await t.server.store.revokeKey(other.keyId)).toBe(true);
    await expectEnvelope(
      await fetch(`${t.baseUrl}/compat/v1/models`, { headers: { 'x-api-key': other.apiKey } }),
      401,
      'authentication_error',
      'invalid_api_key',
    );
  });

  it('an account with no balance gets 402 insufficient_quota before any work, and nothing is charged', async () => {
    const broke = await t.newAccount(0);
    const res = await fetch(`${t.baseUrl}/compat/v1/test/metered`, {
      method: 'POST',
      headers: { authorization: `Bearer ${broke.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ seconds: 3 }),
    });
    await expectEnvelope(res, 402, 'insufficient_quota', 'insufficient_quota');
    expect(await t.server.store.listUsage({ accountId: broke.accountId })).toEqual([]);
    // Listing models is not work: an account with no balance can still see them.
    expect((await fetch(`${t.baseUrl}/compat/v1/models`, { headers: { 'x-api-key': broke.apiKey } })).status).toBe(200);
  });

  it('no API key ever appears in the log output', async () => {
    await fetch(`${t.baseUrl}/compat/v1/models?key=x`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    const log = t.logs.join('');
    expect(t.logs.length).toBeGreaterThan(5);
    expect(log).toContain('"requestId"');
    expect(log).not.toContain(t.apiKey);
    expect(log.toLowerCase()).not.toContain(t.apiKey.toLowerCase());
    expect(log.toUpperCase()).not.toContain(t.apiKey.toUpperCase());
  });
});
