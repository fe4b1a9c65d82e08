/**
 * The admin API's read-only reports over HTTP: an account's usage per UTC day (exactly `days` entries
 * ending today, zero-filled, summed from real billed requests and ledger records), its latest phone calls
 * and usage records (newest first, only its own), and the models with their readiness, on a server without
 * models and on one loading the demo models.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { adminClient, createAdminKey, type AdminClient } from '../helpers/admin.js';
import { meteredProbeRoute } from '../fixtures/metered-probe-route.js';
import type { CallRecord } from '../../src/store/store.js';

let t: TestServer;
let admin: AdminClient;

beforeAll(async () => {
  t = await startTestServer({ extraRoutes: ({ ledger }) => [meteredProbeRoute(ledger)] });
  admin = adminClient(t.baseUrl, (await createAdminKey(t.server.store)).adminKey);
});
afterAll(() => t.close());

const ZERO = { requests: 0, cost_micros: 0, cost: '0.00', seconds: 0, characters: 0, tokens: 0 };

/** The `days` UTC dates ending today, oldest first. */
/** A real billed request through the metered probe route: `seconds` at 100 micros a second. */
function meteredRequest(apiKey: string, seconds: number): Promise<Response> {
  return fetch(`${t.baseUrl}/openai/v1/test/metered`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ seconds }),
  });
}

function lastDays(days: number): string[] {
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  return Array.from({ length: days }, (_, i) => new Date(today - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}

describe('GET /accounts/:id/usage', () => {
  it('gives exactly `days` days ending today, zero-filled, today summing every request of the account', async () => {
    const customer = await t.newAccount(10_000_000);
    // A real billed request: 2.5 s at 100 micros a second.
    const billed = await meteredRequest(customer.apiKey, 2.5);
    expect(billed.status).toBe(200);
    // One more request with two records (characters and tokens): counted once.
    const record = { requestId: 'req_report', accountId: customer.accountId, keyId: customer.keyId, model: 'banjugu-1' };
    await t.server.store.recordUsage([
      { ...record, unit: 'character', quantity: 40, unitPriceMicros: 20, costMicros: 800 },
      { ...record, unit: 'token', quantity: 12, unitPriceMicros: 60, costMicros: 720 },
    ]);
    // Another account's usage is not this one's.
    await t.server.store.recordUsage([
      { ...record, accountId: t.accountId, keyId: t.keyId, unit: 'character', quantity: 1000, unitPriceMicros: 20, costMicros: 20_000 },
    ]);

    const r = await admin.call('GET', `/accounts/${customer.accountId}/usage?days=7`);
    expect(r.status).toBe(200);
    const dates = lastDays(7);
    expect(r.body).toEqual({
      account_id: customer.accountId,
      days: [
        ...dates.slice(0, 6).map((date) => ({ date, ...ZERO })),
        { date: dates[6], requests: 2, cost_micros: 1770, cost: '0.00177', seconds: 2.5, characters: 40, tokens: 12 },
      ],
      total_cost_micros: 1770,
      total_cost: '0.00177',
    });
  });

  it('defaults to 30 days, takes 1 to 366', async () => {
    const fresh = await t.newAccount(1);
    const byDefault = await admin.call('GET', `/accounts/${fresh.accountId}/usage`);
    expect(byDefault.body.days.map((d: { date: string }) => d.date)).toEqual(lastDays(30));
    expect(byDefault.body.days.every((d: object) => JSON.stringify(d) === JSON.stringify({ date: (d as { date: string }).date, ...ZERO }))).toBe(true);
    expect(byDefault.body).toMatchObject({ total_cost_micros: 0, total_cost: '0.00' });
    expect((await admin.call('GET', `/accounts/${fresh.accountId}/usage?days=1`)).body.days.map((d: { date: string }) => d.date)).toEqual(lastDays(1));
    expect((await admin.call('GET', `/accounts/${fresh.accountId}/usage?days=366`)).body.days).toHaveLength(366);
    for (const bad of ['0', '367', 'week', '2.5', '-1']) {
      const r = await admin.call('GET', `/accounts/${fresh.accountId}/usage?days=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_value', param: 'days' });
    }
  });

  it('needs an admin key', async () => {
    expect((await adminClient(t.baseUrl, t.apiKey).call('GET', `/accounts/${t.accountId}/usage`)).status).toBe(403);
  });
});

describe('GET /accounts/:id/calls', () => {
  const call = (id: string, accountId: string, keyId: string, startedAt: string, extra: Partial<CallRecord> = {}): CallRecord => ({
    id,
    accountId,
    keyId,
    carrier: 'twilio',
    mode: 'transcription',
    carrierCallId: `CA_${id}`,
    startedAt,
    endedAt: '2026-03-01T10:01:05.000Z',
    durationMs: 65_000,
    turns: 4,
    callerSeconds: 21.25,
    charactersSynthesized: 180,
    charactersTranslated: 40,
    costMicros: 12_345,
    endReason: 'caller_hangup',
    ...extra,
  });

  it("lists the account's calls newest first, `limit` of them, with what each processed and cost", async () => {
    const customer = await t.newAccount(1);
    const other = await t.newAccount(1);
    await t.server.store.recordCall(
      call('call_b', customer.accountId, customer.keyId, '2026-03-01T11:00:00.000Z', {
        carrier: 'vonage',
        mode: 'relay',
        carrierCallId: null,
        endReason: 'app_ended',
      }),
    );
    await t.server.store.recordCall(call('call_a', customer.accountId, customer.keyId, '2026-03-01T10:00:00.000Z'));
    await t.server.store.recordCall(call('call_c', customer.accountId, customer.keyId, '2026-03-02T09:00:00.000Z'));
    await t.server.store.recordCall(call('call_other', other.accountId, other.keyId, '2026-03-03T09:00:00.000Z'));

    const r = await admin.call('GET', `/accounts/${customer.accountId}/calls`);
    expect(r.status).toBe(200);
    expect(r.body.object).toBe('list');
    expect(r.body.data.map((c: { id: string }) => c.id)).toEqual(['call_c', 'call_b', 'call_a']);
    expect(r.body.data[2]).toEqual({
      id: 'call_a',
      carrier: 'twilio',
      mode: 'transcription',
      carrier_call_id: 'CA_call_a',
      started_at: '2026-03-01T10:00:00.000Z',
      ended_at: '2026-03-01T10:01:05.000Z',
      duration_ms: 65_000,
      turns: 4,
      caller_seconds: 21.25,
      characters_synthesized: 180,
      characters_translated: 40,
      cost_micros: 12_345,
      cost: '0.012345',
      end_reason: 'caller_hangup',
      key_id: customer.keyId,
    });
    expect(r.body.data[1]).toMatchObject({ carrier: 'vonage', mode: 'relay', carrier_call_id: null, end_reason: 'app_ended' });
    expect((await admin.call('GET', `/accounts/${customer.accountId}/calls?limit=2`)).body.data.map((c: { id: string }) => c.id)).toEqual(['call_c', 'call_b']);
    expect((await admin.call('GET', `/accounts/${t.accountId}/calls`)).body).toEqual({ object: 'list', data: [] });
  });

  it('takes a limit of 1 to 500; an unknown account is 404', async () => {
    expect((await admin.call('GET', `/accounts/${t.accountId}/calls?limit=500`)).status).toBe(200);
    for (const bad of ['0', '501', 'all', '2.5']) {
      const r = await admin.call('GET', `/accounts/${t.accountId}/calls?limit=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_value', param: 'limit' });
    }
    expect((await admin.call('GET', '/accounts/acct_000000000000/calls')).body.error).toMatchObject({ code: 'account_not_found', param: 'id' });
  });
});

describe('GET /accounts/:id/usage/records', () => {
  it("lists the account's usage records newest first, `limit` of them, a real billed request included", async () => {
    const customer = await t.newAccount(10_000_000);
    const billed = await meteredRequest(customer.apiKey, 2.5);
    expect(billed.status).toBe(200);
    const billedId = billed.headers.get('x-request-id');
    const record = { requestId: 'req_records', accountId: customer.accountId, keyId: customer.keyId, model: 'banjugu-1' };
    await t.server.store.recordUsage([
      { ...record, unit: 'character', quantity: 40, unitPriceMicros: 20, costMicros: 800 },
      { ...record, unit: 'token', quantity: 12, unitPriceMicros: 60, costMicros: 720 },
    ]);
    await t.server.store.recordUsage([
      { ...record, requestId: 'req_elsewhere', accountId: t.accountId, keyId: t.keyId, unit: 'character', quantity: 1, unitPriceMicros: 20, costMicros: 20 },
    ]);

    const r = await admin.call('GET', `/accounts/${customer.accountId}/usage/records`);
    expect(r.status).toBe(200);
    expect(r.body.object).toBe('list');
    expect(r.body.data.map((u: { request_id: string; unit: string }) => `${u.request_id} ${u.unit}`)).toEqual([
      'req_records token',
      'req_records character',
      `${billedId} second`,
    ]);
    expect(r.body.data[0]).toEqual({
      id: expect.any(Number),
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      request_id: 'req_records',
      key_id: customer.keyId,
      model: 'banjugu-1',
      unit: 'token',
      quantity: 12,
      unit_price_micros: 60,
      cost_micros: 720,
      cost: '0.00072',
    });
    expect(r.body.data[2]).toMatchObject({ model: 'sunjata-1', unit: 'second', quantity: 2.5, unit_price_micros: 100, cost_micros: 250, cost: '0.00025' });
    expect(r.body.data[0].id).toBeGreaterThan(r.body.data[1].id);
    const one = await admin.call('GET', `/accounts/${customer.accountId}/usage/records?limit=1`);
    expect(one.body.data).toEqual([r.body.data[0]]);
  });

  it('takes a limit of 1 to 500; an unknown account is 404', async () => {
    expect((await admin.call('GET', `/accounts/${t.accountId}/usage/records?limit=500`)).status).toBe(200);
    for (const bad of ['0', '501', 'x']) {
      expect((await admin.call('GET', `/accounts/${t.accountId}/usage/records?limit=${bad}`)).body.error, bad).toMatchObject({
        code: 'invalid_value',
        param: 'limit',
      });
    }
    expect((await admin.call('GET', '/accounts/acct_000000000000/usage/records')).status).toBe(404);
    expect((await adminClient(t.baseUrl, t.apiKey).call('GET', `/accounts/${t.accountId}/usage/records`)).status).toBe(403);
  });
});

describe('GET /models', () => {
  it('without models: the models GET /openai/v1/models lists, none ready, each saying no engine serves it', async () => {
    const r = await admin.call('GET', '/models');
    expect(r.status).toBe(200);
    const listed = (await (await fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json()) as {
      data: { id: string }[];
    };
    expect(r.body.object).toBe('list');
    expect(r.body.ready).toBe(false);
    expect(r.body.data.map((m: { id: string }) => m.id)).toEqual(listed.data.map((m) => m.id));
    expect(r.body.data[0]).toEqual({
      id: 'sunjata-1',
      capability: 'transcription',
      legacy: false,
      engine: null,
      ready: false,
      detail: expect.stringContaining('KUMA_MODELS_MANIFEST'),
    });
  });

  it('with the demo models: each model ready once loaded and warm, with its engine', async () => {
    const withModels = await startTestServer({ config: { modelsManifest: 'models/kuma-models.json', demoPack: false } });
    try {
      const console = adminClient(withModels.baseUrl, (await createAdminKey(withModels.server.store)).adminKey);
      const early = await console.call('GET', '/models');
      expect(early.status).toBe(200);
      // Still loading (or, on a fast machine, already done): a model not ready says why.
      for (const m of early.body.data) if (!m.ready) expect(m.detail).toBe('loading');
      await withModels.server.enginesReady;
      const r = await console.call('GET', '/models');
      expect(r.body.ready).toBe(true);
      expect(r.body.data.find((m: { id: string }) => m.id === 'jifili-1')).toEqual({
        id: 'jifili-1',
        capability: 'speech',
        legacy: false,
        engine: 'vits-hf',
        ready: true,
      });
      expect(r.body.data.find((m: { id: string }) => m.id === 'banjugu-1')).toMatchObject({ capability: 'translation', engine: 'nllb', ready: true });
      for (const m of r.body.data) expect(m).not.toHaveProperty('detail');
    } finally {
      await withModels.close();
    }
  }, 120_000);
});
