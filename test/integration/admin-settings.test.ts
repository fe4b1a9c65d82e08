/**
 * The admin API's per-account settings over HTTP against a real server with rate limits on: limit
 * overrides of an account or a key — shown with the limits in force, applied to the very next API request
 * although the key cache would keep the old ones a minute, put back to the defaults — and an account's
 * webhook, whose signing secret is shown once by PUT and never by GET, the audit trail or the log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { adminClient, createAdminKey, type AdminClient } from '../helpers/admin.js';

let t: TestServer;
let admin: AdminClient;

const DEFAULTS = {
  account: { requests_per_minute: 600, tokens_per_minute: 60_000, concurrent: 16 },
  key: { requests_per_minute: 0, tokens_per_minute: 0, concurrent: 0 },
};
const NO_OVERRIDES = { requests_per_minute: null, tokens_per_minute: null, concurrent: null };

beforeAll(async () => {
  t = await startTestServer({
    // A minute of key cache: a change that did not drop it would leave the old limits in force for the test.
    config: { authCacheTtlMs: 60_000, rateLimits: true, accountRequestsPerMinute: 600, accountTokensPerMinute: 60_000, accountConcurrent: 16 },
    rateLimitClock: () => 0, // frozen: a used-up bucket stays empty
  });
  admin = adminClient(t.baseUrl, (await createAdminKey(t.server.store)).adminKey);
});
afterAll(() => t.close());

const models = async (key: string) => {
  const res = await fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as any };
};

function expectError(r: { status: number; body: any }, status: number, code: string, param: string | null = null): string {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.error).toMatchObject({ code, param });
  return r.body.error.message as string;
}

const lastAudit = async (n: number) => (await admin.call('GET', `/audit?limit=${n}`)).body.data as any[];

describe('rate limits', () => {
  it("GET shows an account's or a key's overrides (none) and the configured defaults in force", async () => {
    const a = await t.newAccount(1_000_000);
    expect((await admin.call('GET', `/limits/${a.accountId}`)).body).toEqual({
      subject: a.accountId,
      kind: 'account',
      enforced: true,
      overrides: NO_OVERRIDES,
      effective: DEFAULTS.account,
    });
    const key = await admin.call('GET', `/limits/${a.keyId}`);
    expect(key.status).toBe(200);
    expect(key.body).toEqual({ subject: a.keyId, kind: 'key', enforced: true, overrides: NO_OVERRIDES, effective: DEFAULTS.key });
  });

  it('PATCH applies to the very next request of an account whose key is cached; null puts a field back; DELETE drops them all', async () => {
    const a = await t.newAccount(1_000_000);
    expect((await models(a.apiKey)).status).toBe(200); // the key, with its limits, is now cached for a minute

    const set = await admin.call('PATCH', `/limits/${a.accountId}`, { requests_per_minute: 1, concurrent: 0 });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({
      subject: a.accountId,
      kind: 'account',
      enforced: true,
      overrides: { requests_per_minute: 1, tokens_per_minute: null, concurrent: 0 },
      effective: { requests_per_minute: 1, tokens_per_minute: 60_000, concurrent: 0 },
    });
    expect((await models(a.apiKey)).status).toBe(200);
    const refused = await models(a.apiKey);
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toContain(`account ${a.accountId}`);

    const back = await admin.call('PATCH', `/limits/${a.accountId}`, { requests_per_minute: null });
    expect(back.body.overrides).toEqual({ requests_per_minute: null, tokens_per_minute: null, concurrent: 0 });
    expect(back.body.effective).toEqual({ ...DEFAULTS.account, concurrent: 0 });
    expect((await models(a.apiKey)).status).toBe(200);
    expect(await t.server.store.getRateLimits(a.accountId)).toEqual({ requestsPerMinute: null, tokensPerMinute: null, concurrent: 0 });

    const cleared = await admin.call('DELETE', `/limits/${a.accountId}`);
    expect(cleared.status).toBe(200);
    expect(cleared.body).toEqual({ subject: a.accountId, kind: 'account', enforced: true, overrides: NO_OVERRIDES, effective: DEFAULTS.account });
    expect(await t.server.store.getRateLimits(a.accountId)).toEqual({ requestsPerMinute: null, tokensPerMinute: null, concurrent: null });
    // Cleared again: nothing to drop, the same answer.
    expect((await admin.call('DELETE', `/limits/${a.accountId}`)).body.overrides).toEqual(NO_OVERRIDES);
  });

  it("a key's override limits that key alone", async () => {
    const a = await t.newAccount(1_000_000);
    const other = (await admin.call('POST', `/accounts/${a.accountId}/keys`, {})).body.api_key as string;
    const set = await admin.call('PATCH', `/limits/${a.keyId}`, { requests_per_minute: 1 });
    expect(set.body).toMatchObject({
      kind: 'key',
      overrides: { requests_per_minute: 1 },
      effective: { requests_per_minute: 1, tokens_per_minute: 0, concurrent: 0 },
    });
    expect((await models(a.apiKey)).status).toBe(200);
    const refused = await models(a.apiKey);
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toContain(`key ${a.keyId}`);
    expect((await models(other)).status).toBe(200);
  });

  it('refuses bad bodies with 400, and an id that is neither an account nor a key with 404 subject_not_found', async () => {
    const subject = `/limits/${t.accountId}`;
    expect(expectError(await admin.call('PATCH', subject, {}), 400, 'invalid_value')).toMatch(/at least one of requests_per_minute/);
    for (const bad of [-1, 1.5, '5', true, 2 ** 53]) expectError(await admin.call('PATCH', subject, { concurrent: bad }), 400, 'invalid_value', 'concurrent');
    expectError(await admin.call('PATCH', subject, { requests: 5 }), 400, 'invalid_value');
    expectError(await admin.call('PATCH', subject, '{"concurrent":'), 400, 'invalid_json');
    expect(await t.server.store.getRateLimits(t.accountId)).toEqual({ requestsPerMinute: null, tokensPerMinute: null, concurrent: null });
    for (const id of ['acct_000000000000', 'key_000000000000', 'nothing']) {
      expect(expectError(await admin.call('GET', `/limits/${id}`), 404, 'subject_not_found', 'subject')).toBe('No account or API key with this id.');
      expectError(await admin.call('PATCH', `/limits/${id}`, { concurrent: 1 }), 404, 'subject_not_found', 'subject');
      expectError(await admin.call('DELETE', `/limits/${id}`), 404, 'subject_not_found', 'subject');
    }
    expect((await adminClient(t.baseUrl, t.apiKey).call('PATCH', subject, { concurrent: 1 })).status).toBe(403);
  });

  it('audits each change with what was set', async () => {
    const a = await t.newAccount(1);
    const set = await admin.call('PATCH', `/limits/${a.keyId}`, { tokens_per_minute: 500, concurrent: null });
    const clear = await admin.call('DELETE', `/limits/${a.keyId}`);
    await admin.call('GET', `/limits/${a.keyId}`);
    expect(await lastAudit(2)).toEqual([
      expect.objectContaining({
        action: 'limits.clear',
        target: a.keyId,
        detail: { kind: 'key', had_overrides: true },
        request_id: clear.res.headers.get('x-request-id'),
      }),
      expect.objectContaining({
        action: 'limits.set',
        target: a.keyId,
        detail: { kind: 'key', tokens_per_minute: 500, concurrent: null },
        request_id: set.res.headers.get('x-request-id'),
      }),
    ]);
  });

  it('says when this server enforces no limits (KUMA_RATE_LIMITS=off)', async () => {
    const off = await startTestServer();
    try {
      const console = adminClient(off.baseUrl, (await createAdminKey(off.server.store)).adminKey);
      const r = await console.call('PATCH', `/limits/${off.accountId}`, { requests_per_minute: 1 });
      expect(r.body).toMatchObject({ enforced: false, overrides: { requests_per_minute: 1 }, effective: { requests_per_minute: 1 } });
      expect((await console.call('GET', `/limits/${off.accountId}`)).body.enforced).toBe(false);
    } finally {
      await off.close();
    }
  });
});

describe('webhooks', () => {
  const SECRET = /^whsec_[A-Za-z0-9_-]{43}$/;
  /** Every signing secret PUT handed out: none may appear in a GET, the audit trail or the log. */
  const secretsShown: string[] = [];

  it('PUT sets the URL and shows a new signing secret once; GET shows the URL, never the secret', async () => {
    const a = await t.newAccount(1);
    expect((await admin.call('GET', `/accounts/${a.accountId}/webhook`)).body).toEqual({ account_id: a.accountId, url: null, updated_at: null });

    const set = await admin.call('PUT', `/accounts/${a.accountId}/webhook`, { url: 'https://hooks.example.com/kuma?x=1' });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({
      account_id: a.accountId,
      url: 'https://hooks.example.com/kuma?x=1',
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      secret: expect.stringMatching(SECRET),
    });
    secretsShown.push(set.body.secret);
    expect(await t.server.store.getWebhook(a.accountId)).toMatchObject({ url: 'https://hooks.example.com/kuma?x=1', secret: set.body.secret });

    const shown = await admin.call('GET', `/accounts/${a.accountId}/webhook`);
    expect(shown.body).toEqual({ account_id: a.accountId, url: 'https://hooks.example.com/kuma?x=1', updated_at: set.body.updated_at });
    expect(JSON.stringify(shown.body)).not.toContain('whsec_');
  });

  it('PUT again makes a new secret unless keep_secret; DELETE forgets the webhook', async () => {
    const a = await t.newAccount(1);
    const path = `/accounts/${a.accountId}/webhook`;
    const first = (await admin.call('PUT', path, { url: 'https://a.example.com/' })).body.secret;
    const second = (await admin.call('PUT', path, { url: 'https://b.example.com/', keep_secret: false })).body.secret;
    secretsShown.push(first, second);
    expect(second).toMatch(SECRET);
    expect(second).not.toBe(first);
    const kept = await admin.call('PUT', path, { url: 'http://10.0.0.5:8080/events', keep_secret: true });
    expect(kept.body).toEqual({ account_id: a.accountId, url: 'http://10.0.0.5:8080/events', updated_at: expect.any(String) });
    expect(await t.server.store.getWebhook(a.accountId)).toMatchObject({ url: 'http://10.0.0.5:8080/events', secret: second });

    const cleared = await admin.call('DELETE', path);
    expect(cleared.status).toBe(200);
    expect(cleared.body).toEqual({ account_id: a.accountId, url: null, updated_at: null });
    expect(await t.server.store.getWebhook(a.accountId)).toBeUndefined();
    expect((await admin.call('GET', path)).body.url).toBeNull();
    expect((await admin.call('DELETE', path)).status).toBe(200);
  });

  it('refuses URLs Kuma could not POST to, a secret to keep where there is none, and unknown accounts', async () => {
    const a = await t.newAccount(1);
    const path = `/accounts/${a.accountId}/webhook`;
    const refusals: Array<[unknown, string, RegExp]> = [
      [{ url: 'not a url' }, 'url', /is not a URL/],
      [{ url: 'ftp://example.com/x' }, 'url', /must be https/],
      [{ url: 'https://user:pw@example.com/' }, 'url', /user name or password/],
      [{ url: 'https://example.com/#frag' }, 'url', /fragment/],
      [{ url: `https://example.com/${'x'.repeat(2048)}` }, 'url', /longer than 2048/],
      [{ url: 'https://example.com/', keep_secret: true }, 'keep_secret', /no webhook yet, so no secret to keep/],
      [{ url: 'https://example.com/', keep_secret: 'yes' }, 'keep_secret', /./],
      [{ url: 7 }, 'url', /./],
    ];
    for (const [body, param, message] of refusals)
      expect(expectError(await admin.call('PUT', path, body), 400, 'invalid_value', param), JSON.stringify(body)).toMatch(message);
    expectError(await admin.call('PUT', path, { keep_secret: false }), 400, 'missing_required_parameter', 'url');
    expectError(await admin.call('PUT', path, { url: 'https://example.com/', secret: 'whsec_mine' }), 400, 'invalid_value');
    expect(await t.server.store.getWebhook(a.accountId)).toBeUndefined();
    for (const method of ['GET', 'PUT', 'DELETE']) {
      expectError(
        await admin.call(method, '/accounts/acct_000000000000/webhook', method === 'PUT' ? { url: 'https://example.com/' } : undefined),
        404,
        'account_not_found',
        'id',
      );
    }
    expect((await adminClient(t.baseUrl, t.apiKey).call('GET', path)).status).toBe(403);
  });

  it('audits setting and clearing by account, with the URL and never the secret — nor does the log carry it', async () => {
    const a = await t.newAccount(1);
    const path = `/accounts/${a.accountId}/webhook`;
    const set = await admin.call('PUT', path, { url: 'https://audit.example.com/e' });
    secretsShown.push(set.body.secret);
    const clear = await admin.call('DELETE', path);
    expect(await lastAudit(2)).toEqual([
      expect.objectContaining({
        action: 'webhook.clear',
        target: a.accountId,
        detail: { had_webhook: true },
        request_id: clear.res.headers.get('x-request-id'),
      }),
      expect.objectContaining({
        action: 'webhook.set',
        target: a.accountId,
        detail: { url: 'https://audit.example.com/e', new_secret: true, replaced: false },
        request_id: set.res.headers.get('x-request-id'),
      }),
    ]);
    const logged = t.logs.map((l) => JSON.parse(l)).find((l) => l.audit === true && l.requestId === set.res.headers.get('x-request-id'));
    expect(logged).toMatchObject({ action: 'webhook.set', target: a.accountId });

    const auditText = JSON.stringify((await admin.call('GET', '/audit?limit=1000')).body);
    const logText = t.logs.join('\n');
    expect(secretsShown.length).toBeGreaterThanOrEqual(4);
    for (const secret of secretsShown) {
      expect(secret).toMatch(SECRET);
      expect(auditText).not.toContain(secret);
      expect(logText).not.toContain(secret);
    }
    expect(auditText).not.toContain('whsec_');
    expect(logText).not.toContain('whsec_');
  });
});
