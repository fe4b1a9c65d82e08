/**
 * The admin API over HTTP against a real server: who may call it (admin keys only; an API key is 403, an
 * admin key on the API is an incorrect API key), accounts and their keys end to end — a key made here
 * works on the API at once and is refused at once after its revocation, although the key cache would
 * keep it a minute — and the audit trail of every change, with no key material in it or in the log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { adminClient, createAdminKey, type AdminClient } from '../helpers/admin.js';
import { meteredProbeRoute } from '../fixtures/metered-probe-route.js';
import { generateAdminKey } from '../../src/auth/admin-keys.js';

let t: TestServer;
let adminKey: string;
let adminKeyId: string;
let admin: AdminClient;
/** Every key the admin API handed out: none may appear in the audit trail or the log. */
const secretsShown: string[] = [];

beforeAll(async () => {
  // A minute of key cache: a revocation that did not drop it would leave the key working for the test.
  t = await startTestServer({ config: { authCacheTtlMs: 60_000 }, extraRoutes: ({ ledger }) => [meteredProbeRoute(ledger)] });
  ({ adminKey, id: adminKeyId } = await createAdminKey(t.server.store));
  secretsShown.push(adminKey);
  admin = adminClient(t.baseUrl, adminKey);
});
afterAll(() => t.close());

const models = (key: string) => fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${key}` } });

function expectError(r: { status: number; body: any }, status: number, code: string, param: string | null = null) {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.error).toMatchObject({ code, param });
  expect(typeof r.body.error.message).toBe('string');
  return r.body.error.message as string;
}

describe('who may call it', () => {
  it('no key: 401 invalid_api_key saying an admin key is needed and how to make one', async () => {
    const r = await adminClient(t.baseUrl, '').call('GET', '/accounts', undefined, { authorization: '' });
    const message = expectError(r, 401, 'invalid_api_key');
    expect(r.body.error.type).toBe('authentication_error');
    expect(message).toContain('Authorization: Bearer kadm_');
    expect(message).toContain('npm run keys -- admin create');
  });

  it('an unknown, malformed or revoked admin key: 401, the key never echoed', async () => {
    const unknown = generateAdminKey();
    for (const key of [unknown, 'kadm_short', 'not-a-key']) {
      const r = await adminClient(t.baseUrl, key).call('GET', '/whoami');
      expect(expectError(r, 401, 'invalid_api_key')).not.toContain(key);
      expect(JSON.stringify(r.body)).not.toContain(key.slice(5, 20));
    }
    const other = await createAdminKey(t.server.store, 'soon revoked');
    expect((await adminClient(t.baseUrl, other.adminKey).call('GET', '/whoami')).status).toBe(200);
    expect(await t.server.store.revokeAdminKey(other.id)).toBe(true);
    expectError(await adminClient(t.baseUrl, other.adminKey).call('GET', '/whoami'), 401, 'invalid_api_key');
  });

  it('an API key or a client secret: 403 permission_denied', async () => {
    for (const key of [t.apiKey, 'ek_0123456789abcdef']) {
      const r = await adminClient(t.baseUrl, key).call('GET', '/accounts');
      expect(expectError(r, 403, 'permission_denied')).toBe('API keys cannot use the admin endpoints; use an admin key (Authorization: Bearer kadm_…).');
      expect(r.body.error.type).toBe('permission_error');
    }
  });

  it('an admin key on the API is just an incorrect API key (401), as Bearer or x-api-key', async () => {
    const bearer = await models(adminKey);
    expect(bearer.status).toBe(401);
    expect(((await bearer.json()) as any).error.code).toBe('invalid_api_key');
    expect((await fetch(`${t.baseUrl}/compat/v1/models`, { headers: { 'x-api-key': adminKey } })).status).toBe(401);
  });

  it('the scheme in any case; whoami names the key', async () => {
    const r = await admin.call('GET', '/whoami', undefined, { authorization: `bEARer ${adminKey}` });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: adminKeyId, label: 'test admin key', created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) });
    expect(r.res.headers.get('x-request-id')).toBeTruthy();
  });

  it('refusals are logged at info with their reason and without the key', async () => {
    const presented = generateAdminKey();
    const calls = [
      adminClient(t.baseUrl, t.apiKey).call('GET', '/whoami'),
      adminClient(t.baseUrl, presented).call('GET', '/whoami'),
      adminClient(t.baseUrl, '').call('GET', '/whoami', undefined, { authorization: '' }),
    ];
    const ids = (await Promise.all(calls)).map((r) => r.res.headers.get('x-request-id'));
    const refused = t.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'admin authentication refused' && ids.includes(l.requestId));
    expect(refused.map((l) => l.reason).sort()).toEqual(['api_key', 'incorrect', 'missing']);
    expect(t.logs.join('\n')).not.toContain(presented);
    for (const line of refused) expect(line.level).toBe(30);
    expect(t.logs.join('\n')).not.toContain(t.apiKey);
  });
});

describe('accounts', () => {
  it('are created with a balance in units (string or number), shown in micros and units', async () => {
    const r = await admin.call('POST', '/accounts', { name: 'Acme', balance: '12.5' });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^acct_[0-9a-f]{12}$/),
      name: 'Acme',
      balance_micros: 12_500_000,
      balance: '12.50',
      available_micros: 12_500_000,
      available: '12.50',
      created_at: expect.any(String),
      active_keys: 0,
    });
    expect((await admin.call('POST', '/accounts', { name: 'Number', balance: 2.25 })).body.balance_micros).toBe(2_250_000);
    expect((await admin.call('POST', '/accounts', { name: 'No balance' })).body.balance).toBe('0.00');
    expect(await t.server.store.getAccount(r.body.id)).toMatchObject({ name: 'Acme', balanceMicros: 12_500_000 });
  });

  it('refuses bad bodies with 400 naming the field', async () => {
    expectError(await admin.call('POST', '/accounts', {}), 400, 'missing_required_parameter', 'name');
    expectError(await admin.call('POST', '/accounts', { name: '   ' }), 400, 'invalid_value', 'name');
    expectError(await admin.call('POST', '/accounts', { name: 'x'.repeat(101) }), 400, 'invalid_value', 'name');
    expect(expectError(await admin.call('POST', '/accounts', { name: 'a', balance: '-1' }), 400, 'invalid_value', 'balance')).toMatch(/negative/);
    expect(expectError(await admin.call('POST', '/accounts', { name: 'a', balance: '1.1234567' }), 400, 'invalid_value', 'balance')).toMatch(/Invalid amount/);
    expectError(await admin.call('POST', '/accounts', { name: 'a', balance: true }), 400, 'invalid_value', 'balance');
    expectError(await admin.call('POST', '/accounts', { name: 'a', balanse: '5' }), 400, 'invalid_value');
    expectError(await admin.call('POST', '/accounts', '{"name":'), 400, 'invalid_json');
  });

  it('are listed with their available balance (less live holds) and their active keys; one shows its keys', async () => {
    const created = (await admin.call('POST', '/accounts', { name: 'Listed', balance: '3' })).body;
    await admin.call('POST', `/accounts/${created.id}/keys`, { label: 'one' });
    const revoked = (await admin.call('POST', `/accounts/${created.id}/keys`, {})).body;
    secretsShown.push(revoked.api_key);
    await admin.call('DELETE', `/keys/${revoked.key.id}`);
    await t.server.store.placeHold(
      { id: 'hold_admin', accountId: created.id, requestId: 'req_hold', amountMicros: 1_000_000, expiresAt: Date.now() + 60_000 },
      Date.now(),
    );

    const list = await admin.call('GET', '/accounts');
    expect(list.status).toBe(200);
    expect(list.body.object).toBe('list');
    expect(list.body.data.map((a: any) => a.id)).toContain(t.accountId);
    expect(list.body.data.find((a: any) => a.id === created.id)).toMatchObject({ balance_micros: 3_000_000, available_micros: 2_000_000, active_keys: 1 });

    const one = await admin.call('GET', `/accounts/${created.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: created.id, name: 'Listed', balance: '3.00', available_micros: 2_000_000, available: '2.00', active_keys: 1 });
    expect(one.body.keys).toEqual([
      { id: expect.stringMatching(/^key_/), account_id: created.id, label: 'one', created_at: expect.any(String), revoked_at: null },
      { id: revoked.key.id, account_id: created.id, label: 'default', created_at: expect.any(String), revoked_at: expect.any(String) },
    ]);
    expect(JSON.stringify(one.body)).not.toMatch(/hash/i);
    await t.server.store.releaseHold('hold_admin');
  });

  it('an unknown account is 404 account_not_found on every route under it', async () => {
    expectError(await admin.call('GET', '/accounts/acct_000000000000'), 404, 'account_not_found', 'id');
    expectError(await admin.call('POST', '/accounts/acct_000000000000/credit', { amount: '1' }), 404, 'account_not_found', 'id');
    expectError(await admin.call('POST', '/accounts/acct_000000000000/keys', {}), 404, 'account_not_found', 'id');
    expectError(await admin.call('GET', '/accounts/acct_000000000000/usage'), 404, 'account_not_found', 'id');
  });

  it('credit adds or removes units, and an account at zero can work on its very next request', async () => {
    const broke = await t.newAccount(0);
    const work = () =>
      fetch(`${t.baseUrl}/compat/v1/test/metered`, {
        method: 'POST',
        headers: { authorization: `Bearer ${broke.apiKey}`, 'content-type': 'application/json' },
        body: '{"seconds":1}',
      });
    expect((await work()).status).toBe(402);
    const credited = await admin.call('POST', `/accounts/${broke.accountId}/credit`, { amount: '2.5' });
    expect(credited.status).toBe(200);
    expect(credited.body).toMatchObject({ id: broke.accountId, balance_micros: 2_500_000, balance: '2.50', active_keys: 1 });
    expect((await work()).status).toBe(200);
    const debited = await admin.call('POST', `/accounts/${broke.accountId}/credit`, { amount: -3 });
    expect(debited.body.balance_micros).toBe(2_500_000 - 100 - 3_000_000);
    expect(debited.body.balance).toBe('-0.5001');
    expect((await work()).status).toBe(402);
  });

  it('credit refuses a missing, zero or malformed amount', async () => {
    expectError(await admin.call('POST', `/accounts/${t.accountId}/credit`, {}), 400, 'missing_required_parameter', 'amount');
    expect(expectError(await admin.call('POST', `/accounts/${t.accountId}/credit`, { amount: '0' }), 400, 'invalid_value', 'amount')).toMatch(/zero/);
    expectError(await admin.call('POST', `/accounts/${t.accountId}/credit`, { amount: '1e3' }), 400, 'invalid_value', 'amount');
    expectError(await admin.call('POST', `/accounts/${t.accountId}/credit`, { amount: null }), 400, 'invalid_value', 'amount');
  });
});

describe('API keys', () => {
  it('a key made over the admin API works at once, and is refused right after DELETE /keys/:id', async () => {
    const account = (await admin.call('POST', '/accounts', { name: 'Keys', balance: '1' })).body;
    const created = await admin.call('POST', `/accounts/${account.id}/keys`, { label: 'console' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      key: { id: expect.stringMatching(/^key_[0-9a-f]{12}$/), account_id: account.id, label: 'console', created_at: expect.any(String), revoked_at: null },
      api_key: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
    });
    const apiKey: string = created.body.api_key;
    secretsShown.push(apiKey);
    expect((await models(apiKey)).status).toBe(200);
    expect((await models(apiKey)).status).toBe(200); // now in the key cache, for a minute

    const revoked = await admin.call('DELETE', `/keys/${created.body.key.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.key).toMatchObject({ id: created.body.key.id, revoked_at: expect.stringMatching(/^\d{4}-/) });
    const refused = await models(apiKey);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as any).error.code).toBe('invalid_api_key');
  });

  it('revoking an unknown or already revoked key is 404 key_not_found', async () => {
    const other = await t.newAccount(1);
    expect((await admin.call('DELETE', `/keys/${other.keyId}`)).status).toBe(200);
    expectError(await admin.call('DELETE', `/keys/${other.keyId}`), 404, 'key_not_found', 'id');
    expectError(await admin.call('DELETE', '/keys/key_000000000000'), 404, 'key_not_found', 'id');
  });

  it('a label is at most 100 characters; none gives "default"', async () => {
    expectError(await admin.call('POST', `/accounts/${t.accountId}/keys`, { label: 'x'.repeat(101) }), 400, 'invalid_value', 'label');
    expectError(await admin.call('POST', `/accounts/${t.accountId}/keys`, { label: 7 }), 400, 'invalid_value', 'label');
    const made = await admin.call('POST', `/accounts/${t.accountId}/keys`, {});
    secretsShown.push(made.body.api_key);
    expect(made.body.key.label).toBe('default');
  });
});

describe('the audit trail', () => {
  it('has a row per change, newest first, naming the admin key and the request — and no key material, nor has the log', async () => {
    const account = (await admin.call('POST', '/accounts', { name: 'Audited', balance: '1' })).body;
    const credit = await admin.call('POST', `/accounts/${account.id}/credit`, { amount: '0.5' });
    const key = await admin.call('POST', `/accounts/${account.id}/keys`, { label: 'audited' });
    secretsShown.push(key.body.api_key);
    const revoke = await admin.call('DELETE', `/keys/${key.body.key.id}`);

    const audit = await admin.call('GET', '/audit?limit=4');
    expect(audit.status).toBe(200);
    expect(audit.body.object).toBe('list');
    const entry = (action: string, target: string, detail: object, res: Response) => ({
      id: expect.stringMatching(/^aud_/),
      at: expect.any(String),
      admin_key_id: adminKeyId,
      action,
      target,
      detail,
      request_id: res.headers.get('x-request-id'),
    });
    expect(audit.body.data).toEqual([
      entry('key.revoke', key.body.key.id, { account_id: account.id }, revoke.res),
      entry('key.create', key.body.key.id, { account_id: account.id, label: 'audited' }, key.res),
      entry('account.credit', account.id, { amount_micros: 500_000, balance_micros: 1_500_000 }, credit.res),
      expect.objectContaining({ action: 'account.create', target: account.id, detail: { name: 'Audited', balance_micros: 1_000_000 } }),
    ]);
    const all = await admin.call('GET', '/audit?limit=1000');
    expect(all.body.data.length).toBeGreaterThan(4);
    expect((await admin.call('GET', '/audit')).body.data.length).toBe(all.body.data.length);

    const logged = t.logs.map((l) => JSON.parse(l)).filter((l) => l.audit === true);
    expect(logged.find((l) => l.requestId === revoke.res.headers.get('x-request-id'))).toMatchObject({
      level: 30,
      action: 'key.revoke',
      target: key.body.key.id,
      adminKeyId,
    });
    expect(logged.map((l) => l.action)).toEqual(expect.arrayContaining(['account.create', 'account.credit', 'key.create', 'key.revoke']));

    const auditText = JSON.stringify(all.body);
    const logText = t.logs.join('\n');
    expect(secretsShown.length).toBeGreaterThan(4);
    for (const secret of secretsShown) {
      expect(auditText).not.toContain(secret);
      expect(logText).not.toContain(secret);
    }
  });

  it('?limit= is 1 to 1000', async () => {
    expect((await admin.call('GET', '/audit?limit=1')).body.data).toHaveLength(1);
    for (const bad of ['0', '1001', 'ten', '1.5']) expectError(await admin.call('GET', `/audit?limit=${bad}`), 400, 'invalid_value', 'limit');
  });

  it('reads change nothing: no row for GETs or refused calls', async () => {
    const before = (await admin.call('GET', '/audit?limit=1000')).body.data.length;
    await admin.call('GET', '/accounts');
    await admin.call('POST', '/accounts', { name: '' });
    await adminClient(t.baseUrl, t.apiKey).call('POST', '/accounts', { name: 'refused' });
    expect((await admin.call('GET', '/audit?limit=1000')).body.data.length).toBe(before);
  });
});
