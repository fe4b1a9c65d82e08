/**
 * The admin API's read-only reports over HTTP: an account's usage per UTC day (exactly `days` entries
 * ending today, zero-filled, summed from real billed requests and ledger records), and the models with
 * their readiness, on a server without models and on one loading the demo models.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { adminClient, createAdminKey, type AdminClient } from '../helpers/admin.js';
import { meteredProbeRoute } from '../fixtures/metered-probe-route.js';

let t: TestServer;
let admin: AdminClient;

beforeAll(async () => {
  t = await startTestServer({ extraRoutes: ({ ledger }) => [meteredProbeRoute(ledger)] });
  admin = adminClient(t.baseUrl, (await createAdminKey(t.server.store)).adminKey);
});
afterAll(() => t.close());

const ZERO = { requests: 0, cost_micros: 0, cost: '0.00', seconds: 0, characters: 0, tokens: 0 };

/** The `days` UTC dates ending today, oldest first. */
function lastDays(days: number): string[] {
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  return Array.from({ length: days }, (_, i) => new Date(today - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}

describe('GET /accounts/:id/usage', () => {
  it('gives exactly `days` days ending today, zero-filled, today summing every request of the account', async () => {
    const customer = await t.newAccount(10_000_000);
    // A real billed request: 2.5 s at 100 micros a second.
    const billed = await fetch(`${t.baseUrl}/openai/v1/test/metered`, {
      method: 'POST',
      headers: { authorization: `Bearer ${customer.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ seconds: 2.5 }),
    });
    expect(billed.status).toBe(200);
    // One more request with two records (characters and tokens): counted once.
    const record = { requestId: 'req_report', accountId: customer.accountId, keyId: customer.keyId, model: 'banjugu-1' };
    await t.server.store.recordUsage([
      { ...record, unit: 'character', quantity: 40, unitPriceMicros: 20, costMicros: 800 },
      { ...record, unit: 'token', quantity: 12, unitPriceMicros: 60, costMicros: 720 },
    ]);
    // Another account's usage is not this one's.
    await t.server.store.recordUsage([{ ...record, accountId: t.accountId, keyId: t.keyId, unit: 'character', quantity: 1000, unitPriceMicros: 20, costMicros: 20_000 }]);

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

describe('GET /models', () => {
  it('without models: the models GET /openai/v1/models lists, none ready, each saying no engine serves it', async () => {
    const r = await admin.call('GET', '/models');
    expect(r.status).toBe(200);
    const listed = (await (await fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json()) as { data: { id: string }[] };
    expect(r.body.object).toBe('list');
    expect(r.body.ready).toBe(false);
    expect(r.body.data.map((m: { id: string }) => m.id)).toEqual(listed.data.map((m) => m.id));
    expect(r.body.data[0]).toEqual({ id: 'sunjata-1', capability: 'transcription', legacy: false, engine: null, ready: false, detail: expect.stringContaining('KUMA_MODELS_MANIFEST') });
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
      expect(r.body.data.find((m: { id: string }) => m.id === 'jifili-1')).toEqual({ id: 'jifili-1', capability: 'speech', legacy: false, engine: 'vits-hf', ready: true });
      expect(r.body.data.find((m: { id: string }) => m.id === 'banjugu-1')).toMatchObject({ capability: 'translation', engine: 'nllb', ready: true });
      for (const m of r.body.data) expect(m).not.toHaveProperty('detail');
    } finally {
      await withModels.close();
    }
  }, 120_000);
});
