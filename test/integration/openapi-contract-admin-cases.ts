/**
 * The admin API's exchanges for the OpenAPI contract test: for every /admin/v1 operation its success and
 * each error it can answer (400, 401, 403, 404, 413, 415). Paths are absolute; ids are read when the case
 * runs, once the test server has made them. Limits and the webhook are changed on an account of their own,
 * so that no other case's requests are limited or send events.
 */
import type { ContractCase } from './openapi-contract-cases.js';

interface AdminInputs {
  adminKey: () => string;
  /** An API key: 403 on every admin route. */
  apiKey: () => string;
  /** An account of the server. */
  accountId: () => string;
  /** An active key that the DELETE case revokes. */
  revocableKeyId: () => string;
  /** An account, and a key of it, whose rate limits and webhook the cases change. */
  settingsAccountId: () => string;
  settingsKeyId: () => string;
}

const UNKNOWN_ACCOUNT = 'acct_000000000000';

export function adminContractCases({ adminKey, apiKey, accountId, revocableKeyId, settingsAccountId, settingsKeyId }: AdminInputs): ContractCase[] {
  const asAdmin = () => ({ authorization: `Bearer ${adminKey()}` });
  const jsonHeaders = () => ({ ...asAdmin(), 'content-type': 'application/json' });
  const base = (operation: string, method: ContractCase['method'], path: string | (() => string)) => ({ operation, method, path, absolute: true });
  /** 401 without a key and 403 with an API key: every admin operation answers both. */
  const refusals = (operation: string, method: ContractCase['method'], path: string | (() => string), body?: unknown): ContractCase[] => {
    const type: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
    const sent = body === undefined ? undefined : () => JSON.stringify(body);
    return [
      { ...base(operation, method, path), name: 'no key', headers: () => type, body: sent, status: 401 },
      { ...base(operation, method, path), name: 'an API key', headers: () => ({ authorization: `Bearer ${apiKey()}`, ...type }), body: sent, status: 403 },
    ];
  };
  const get = (operation: string, path: string | (() => string), name: string, status: number): ContractCase => ({
    ...base(operation, 'GET', path),
    name,
    headers: asAdmin,
    status,
  });
  const send =
    (method: ContractCase['method']) =>
    (operation: string, path: string | (() => string), name: string, json: unknown, status: number, extra: Partial<ContractCase> = {}): ContractCase => ({
      ...base(operation, method, path),
      name,
      headers: jsonHeaders,
      body: () => JSON.stringify(json),
      json,
      status,
      ...extra,
    });
  const post = send('POST');
  const patch = send('PATCH');
  const put = send('PUT');
  const del = (operation: string, path: string | (() => string), name: string, status: number): ContractCase => ({
    ...base(operation, 'DELETE', path),
    name,
    headers: asAdmin,
    status,
  });
  /** A JSON route's body errors: over the JSON limit (413) and not JSON (415). */
  const bodyErrors = (operation: string, path: string | (() => string), method: ContractCase['method'] = 'POST'): ContractCase[] => [
    {
      ...base(operation, method, path),
      name: 'a body over the JSON limit',
      headers: jsonHeaders,
      body: () => JSON.stringify({ pad: 'x'.repeat(70 * 1024) }),
      status: 413,
    },
    {
      ...base(operation, method, path),
      name: 'an XML body',
      headers: () => ({ ...asAdmin(), 'content-type': 'application/xml' }),
      body: () => '<account/>',
      status: 415,
    },
  ];
  const account = () => `/admin/v1/accounts/${accountId()}`;
  const limits = () => `/admin/v1/limits/${settingsAccountId()}`;
  const webhook = () => `/admin/v1/accounts/${settingsAccountId()}/webhook`;
  const UNKNOWN_SUBJECT = '/admin/v1/limits/key_000000000000';

  return [
    get('adminWhoami', '/admin/v1/whoami', 'the admin key', 200),
    ...refusals('adminWhoami', 'GET', '/admin/v1/whoami'),

    get('adminListAccounts', '/admin/v1/accounts', 'the accounts', 200),
    ...refusals('adminListAccounts', 'GET', '/admin/v1/accounts'),

    post('adminCreateAccount', '/admin/v1/accounts', 'an account with a balance', { name: 'contract', balance: '1.5' }, 201),
    post('adminCreateAccount', '/admin/v1/accounts', 'no name', { balance: 1 }, 400, { requestValid: false }),
    post('adminCreateAccount', '/admin/v1/accounts', 'a negative balance', { name: 'x', balance: '-1' }, 400),
    ...refusals('adminCreateAccount', 'POST', '/admin/v1/accounts', { name: 'x' }),
    ...bodyErrors('adminCreateAccount', '/admin/v1/accounts'),

    get('adminGetAccount', account, 'an account with its keys', 200),
    get('adminGetAccount', `/admin/v1/accounts/${UNKNOWN_ACCOUNT}`, 'an unknown account', 404),
    ...refusals('adminGetAccount', 'GET', account),

    post('adminCreditAccount', () => `${account()}/credit`, 'credit', { amount: '0.25' }, 200),
    post('adminCreditAccount', () => `${account()}/credit`, 'a zero amount', { amount: 0 }, 400),
    post('adminCreditAccount', () => `${account()}/credit`, 'no amount', {}, 400, { requestValid: false }),
    post('adminCreditAccount', `/admin/v1/accounts/${UNKNOWN_ACCOUNT}/credit`, 'an unknown account', { amount: '1' }, 404),
    ...refusals('adminCreditAccount', 'POST', () => `${account()}/credit`, { amount: '1' }),
    ...bodyErrors('adminCreditAccount', () => `${account()}/credit`),

    post('adminCreateApiKey', () => `${account()}/keys`, 'a key', { label: 'contract' }, 201),
    post('adminCreateApiKey', () => `${account()}/keys`, 'a label over 100 characters', { label: 'x'.repeat(101) }, 400, { requestValid: false }),
    post('adminCreateApiKey', `/admin/v1/accounts/${UNKNOWN_ACCOUNT}/keys`, 'an unknown account', {}, 404),
    ...refusals('adminCreateApiKey', 'POST', () => `${account()}/keys`, {}),
    ...bodyErrors('adminCreateApiKey', () => `${account()}/keys`),

    { ...base('adminRevokeApiKey', 'DELETE', () => `/admin/v1/keys/${revocableKeyId()}`), name: 'revoke', headers: asAdmin, status: 200 },
    { ...base('adminRevokeApiKey', 'DELETE', () => `/admin/v1/keys/${revocableKeyId()}`), name: 'already revoked', headers: asAdmin, status: 404 },
    ...refusals('adminRevokeApiKey', 'DELETE', '/admin/v1/keys/key_000000000000'),

    get('adminAccountUsage', () => `${account()}/usage?days=3`, 'three days', 200),
    get('adminAccountUsage', () => `${account()}/usage?days=0`, 'zero days', 400),
    get('adminAccountUsage', `/admin/v1/accounts/${UNKNOWN_ACCOUNT}/usage`, 'an unknown account', 404),
    ...refusals('adminAccountUsage', 'GET', () => `${account()}/usage`),

    get('adminListModels', '/admin/v1/models', 'the models and their readiness', 200),
    ...refusals('adminListModels', 'GET', '/admin/v1/models'),

    get('adminGetLimits', limits, "an account's limits", 200),
    get('adminGetLimits', () => `/admin/v1/limits/${settingsKeyId()}`, "a key's limits", 200),
    get('adminGetLimits', UNKNOWN_SUBJECT, 'an unknown subject', 404),
    ...refusals('adminGetLimits', 'GET', limits),

    patch('adminSetLimits', limits, 'overrides', { requests_per_minute: 100_000, tokens_per_minute: 0, concurrent: null }, 200),
    patch('adminSetLimits', () => `/admin/v1/limits/${settingsKeyId()}`, "a key's override", { concurrent: 50 }, 200),
    patch('adminSetLimits', limits, 'no field', {}, 400),
    patch('adminSetLimits', limits, 'a negative limit', { concurrent: -1 }, 400, { requestValid: false }),
    patch('adminSetLimits', limits, 'an unknown field', { requests: 5 }, 400, { requestValid: false }),
    patch('adminSetLimits', UNKNOWN_SUBJECT, 'an unknown subject', { concurrent: 1 }, 404),
    ...refusals('adminSetLimits', 'PATCH', limits, { concurrent: 1 }),
    ...bodyErrors('adminSetLimits', limits, 'PATCH'),

    del('adminClearLimits', limits, 'clear', 200),
    del('adminClearLimits', UNKNOWN_SUBJECT, 'an unknown subject', 404),
    ...refusals('adminClearLimits', 'DELETE', limits),

    get('adminGetWebhook', webhook, 'no webhook yet', 200),
    get('adminGetWebhook', `/admin/v1/accounts/${UNKNOWN_ACCOUNT}/webhook`, 'an unknown account', 404),
    ...refusals('adminGetWebhook', 'GET', webhook),

    put('adminSetWebhook', webhook, 'a secret to keep where there is none', { url: 'https://hooks.example.com/kuma', keep_secret: true }, 400),
    put('adminSetWebhook', webhook, 'a URL with a new secret', { url: 'https://hooks.example.com/kuma' }, 200),
    put('adminSetWebhook', webhook, 'a URL keeping the secret', { url: 'https://hooks.example.com/other', keep_secret: true }, 200),
    put('adminSetWebhook', webhook, 'an ftp URL', { url: 'ftp://hooks.example.com/' }, 400),
    put('adminSetWebhook', webhook, 'no URL', { keep_secret: false }, 400, { requestValid: false }),
    put('adminSetWebhook', `/admin/v1/accounts/${UNKNOWN_ACCOUNT}/webhook`, 'an unknown account', { url: 'https://hooks.example.com/' }, 404),
    ...refusals('adminSetWebhook', 'PUT', webhook, { url: 'https://hooks.example.com/' }),
    ...bodyErrors('adminSetWebhook', webhook, 'PUT'),

    del('adminClearWebhook', webhook, 'clear', 200),
    del('adminClearWebhook', `/admin/v1/accounts/${UNKNOWN_ACCOUNT}/webhook`, 'an unknown account', 404),
    ...refusals('adminClearWebhook', 'DELETE', webhook),

    get('adminListCalls', () => `${account()}/calls?limit=5`, 'the latest calls', 200),
    get('adminListCalls', () => `${account()}/calls?limit=501`, 'over the limit', 400),
    get('adminListCalls', `/admin/v1/accounts/${UNKNOWN_ACCOUNT}/calls`, 'an unknown account', 404),
    ...refusals('adminListCalls', 'GET', () => `${account()}/calls`),

    get('adminListUsageRecords', () => `${account()}/usage/records?limit=5`, 'the latest records', 200),
    get('adminListUsageRecords', () => `${account()}/usage/records?limit=0`, 'zero records', 400),
    get('adminListUsageRecords', `/admin/v1/accounts/${UNKNOWN_ACCOUNT}/usage/records`, 'an unknown account', 404),
    ...refusals('adminListUsageRecords', 'GET', () => `${account()}/usage/records`),

    get('adminListAudit', '/admin/v1/audit?limit=5', 'the latest entries', 200),
    get('adminListAudit', '/admin/v1/audit?limit=1001', 'over the limit', 400),
    ...refusals('adminListAudit', 'GET', '/admin/v1/audit'),
  ];
}
