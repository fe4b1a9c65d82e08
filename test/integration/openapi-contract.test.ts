/**
 * The OpenAPI document against the wire. A real server with the demo models serves its own document; the
 * server's route table and the document must list the same routes (both prefixes of the primary surface
 * included); then every operation is called under every prefix it is served at, with successes in every
 * response format and streaming variant and with its errors, and each response's status, Content-Type,
 * JSON body, text body and SSE payloads are validated against the document with ajv. Finally every
 * documented success media type and error status (but 500 and 503, see below) must have been seen.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';
import { OpenApiContract } from '../helpers/openapi-contract.js';
import { casesFor, type ContractCase } from './openapi-contract-cases.js';
import { adminContractCases } from './openapi-contract-admin-cases.js';
import { createAdminKey } from '../helpers/admin.js';
import type { RouteDef } from '../../src/api/types.js';

let t: TestServer;
/** No models, an undocumented probe route: 503 for model-backed operations, and a route-table mismatch. */
let bare: TestServer;
let contract: OpenApiContract;
let brokeKey: string;
let limitedKey: string;
let readinessWhileLoading: Response;
let adminKey: string;
let revocableKeyId: string;
let settings: { accountId: string; keyId: string };

const PROBE: RouteDef = { method: 'GET', path: '/probe/undocumented', surface: 'compat', auth: false, handler: async () => ({ kind: 'json', body: {} }) };

beforeAll(async () => {
  t = await startTestServer({
    clock: () => new Date('2026-09-01T00:00:00Z'), // the legacy voices (aac, flac, wav_8k, ulaw_8k) still serve
    config: {
      modelsManifest: 'models/kuma-models.json',
      demoPack: false,
      maxAudioSeconds: 3,
      maxJsonBodyBytes: 64 * 1024,
      // Limits on, unlimited by default: only the account of `limitedKey` is limited.
      rateLimits: true,
      accountRequestsPerMinute: 0,
      accountTokensPerMinute: 0,
      accountConcurrent: 0,
    },
    rateLimitClock: () => 0, // frozen: a used-up bucket stays empty for the whole test
  });
  bare = await startTestServer({ config: { maxAudioSeconds: 3, maxJsonBodyBytes: 64 * 1024 }, extraRoutes: () => [PROBE] });
  brokeKey = (await t.newAccount(0)).apiKey;
  const limited = await t.newAccount(1_000_000);
  await t.server.store.setRateLimits(limited.accountId, { requestsPerMinute: 1 });
  limitedKey = limited.apiKey;
  adminKey = (await createAdminKey(t.server.store)).adminKey;
  revocableKeyId = (await t.newAccount(1)).keyId;
  settings = await t.newAccount(1);
  await (await fetch(`${t.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${limitedKey}` } })).text();
  contract = new OpenApiContract((await (await fetch(`${t.baseUrl}/compat/v1/openapi.json`)).json()) as Record<string, unknown>);
  // Readiness while the models load (503 not_ready, or 200 if they were quick): checked below.
  readinessWhileLoading = await fetch(`${t.baseUrl}/readyz`);
  await t.server.enginesReady;
}, 120_000);
afterAll(async () => {
  await t?.close();
  await bare?.close();
});

const speech = spokenPhrases(['i ni ce']).samples;
const audio = {
  speech: () => new Blob([wavBytes(speech, 16000)], { type: 'audio/wav' }),
  /** Over the server's 3 s limit. */
  tooLong: () => new Blob([wavBytes(new Float32Array(16000 * 4), 16000)], { type: 'audio/wav' }),
};

describe('the route table', () => {
  it('and the document list the same routes, both prefixes of the primary surface included', () => {
    const served = t.server.routes.map((r) => `${r.method} ${r.pattern}`).sort();
    expect(contract.routeTable().sort()).toEqual(served);
    expect(served).toContain('POST /openai/v1/audio/speech');
    expect(served).toContain('POST /compat/v1/audio/speech');
  });

  it('with an undocumented route is caught: it is served but not in the document', async () => {
    const doc = new OpenApiContract((await (await fetch(`${bare.baseUrl}/openai/v1/openapi.json`)).json()) as Record<string, unknown>);
    const served = new Set(bare.server.routes.map((r) => `${r.method} ${r.pattern}`));
    const documented = new Set(doc.routeTable());
    expect([...served].filter((r) => !documented.has(r)).sort()).toEqual(['GET /compat/v1/probe/undocumented', 'GET /openai/v1/probe/undocumented']);
    expect([...documented].filter((r) => !served.has(r))).toEqual([]);
  });

  it('is served as the same document under both prefixes', async () => {
    expect(await (await fetch(`${t.baseUrl}/openai/v1/openapi.json`)).json()).toEqual(contract.doc);
  });
});

async function run(c: ContractCase, prefix: string): Promise<void> {
  const server = c.server === 'bare' ? bare : t;
  const path = prefix + (typeof c.path === 'function' ? c.path() : c.path);
  const res = await fetch(server.baseUrl + path, { method: c.method, headers: c.headers?.(), body: c.body?.() });
  // The document describes paths; a query (e.g. a carrier stream's ?token=) is the request's, not the path's.
  const checked = await contract.check({ method: c.method, path: path.split('?')[0]!, responseFormat: c.responseFormat }, res).catch((err: Error) => {
    throw new Error(`${c.name}: ${err.message}`);
  });
  expect(checked.status, `${c.name}: ${JSON.stringify(checked.body).slice(0, 300)}`).toBe(c.status);
  if (c.expectMediaType) expect(checked.mediaType, c.name).toBe(c.expectMediaType);
  if (c.json !== undefined && c.json !== null) {
    // What the document says of the request agrees with what the server did with it.
    const found = contract.find(c.method, path.split('?')[0]!)!;
    const mediaPointer = `/paths/${found.operation.path.replace(/\//g, '~1')}/${c.method.toLowerCase()}/requestBody/content/application~1json/schema`;
    const validate = contract.validator(mediaPointer);
    expect(
      validate(c.json),
      `${c.name}: the document ${c.requestValid === false ? 'accepts' : 'rejects'} the request: ${JSON.stringify(validate.errors)}`,
    ).toBe(c.requestValid ?? true);
  }
}

const cases = casesFor({ audio, key: () => t.apiKey, brokeKey: () => brokeKey, limitedKey: () => limitedKey, bareKey: () => bare.apiKey });
const PREFIXED = cases.filter((c) => !c.absolute);

for (const prefix of ['/compat/v1', '/openai/v1']) {
  describe(`under ${prefix}`, () => {
    for (const operation of new Set(PREFIXED.map((c) => c.operation))) {
      const group = PREFIXED.filter((c) => c.operation === operation);
      it(`${operation} (${group.length} exchanges): every response matches the document`, async () => {
        for (const c of group) await run(c, prefix);
      }, 120_000);
    }
  });
}

describe('the operational endpoints', () => {
  it('answer as documented', async () => {
    for (const c of cases.filter((c) => c.absolute)) await run(c, '');
    const early = await contract.check({ method: 'GET', path: '/readyz' }, readinessWhileLoading);
    expect([200, 503]).toContain(early.status);
  });
});

describe('the admin API', () => {
  const admin = adminContractCases({
    adminKey: () => adminKey,
    apiKey: () => t.apiKey,
    accountId: () => t.accountId,
    revocableKeyId: () => revocableKeyId,
    settingsAccountId: () => settings.accountId,
    settingsKeyId: () => settings.keyId,
  });
  for (const operation of new Set(admin.map((c) => c.operation))) {
    const group = admin.filter((c) => c.operation === operation);
    it(`${operation} (${group.length} exchanges): every response matches the document`, async () => {
      for (const c of group) await run(c, '');
    });
  }
});

describe('coverage', () => {
  /**
   * 500 cannot be provoked without a fault, and 503 of the operations without a model only while the server
   * shuts down; every other documented status, and every success media type, must have been seen.
   */
  const UNPROVOKED = new Set([500, 503]);
  it('every documented success media type and error status was exercised, under every prefix', () => {
    const missing: string[] = [];
    for (const operation of contract.operations()) {
      for (const server of operation.servers) {
        const key = `${operation.method} ${server}${operation.path}`;
        const seen = contract.seen.get(key) ?? new Set();
        for (const [status, response] of Object.entries<any>(operation.op.responses)) {
          if (UNPROVOKED.has(Number(status))) continue;
          const media = Number(status) < 300 ? Object.keys(response.content ?? {}) : ['application/json'];
          for (const m of media) if (!seen.has(`${status} ${m}`)) missing.push(`${key} ${status} ${m}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
