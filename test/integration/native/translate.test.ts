/**
 * GET /v1/models/translate/supported-languages and POST /v1/models/translate with the demo models, before
 * the retirement date: the Djelia JS SDK's calls replayed with axios as its source sends them
 * (src/services/translation.js: x-api-key and a JSON Content-Type, the response's data mapped through
 * fromJSON), the Python SDK's request shapes, the translation equal to the primary surface's, its ledger
 * rows equal to POST /chat/completions', 422 entries for every rule, x-api-key only, and random bodies.
 */
import axios from 'axios';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { chargesSettled } from '../../helpers/settled.js';
import { jsSdkAxios, startNativeServer } from './sdk-axios.js';
import { pythonJson } from './python-json.js';

const TEXT = 'i ni ce';

let t: TestServer;
beforeAll(async () => {
  t = await startNativeServer();
}, 120_000);
afterAll(() => t.close());

const sdk = () => jsSdkAxios(t.apiKey);
const post = (path: string, body: string, apiKey = t.apiKey) =>
  fetch(`${t.baseUrl}${path}`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body });
const chat = async (text: string, source: string, target: string, apiKey = t.apiKey) => {
  const res = await fetch(`${t.baseUrl}/compat/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'banjugu-1', messages: [{ role: 'user', content: text }], djelia: { source_language: source, target_language: target } }),
  });
  return ((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;
};

describe('the Djelia JS SDK', () => {
  it('translation.getSupportedLanguages: [{code, name}] for the three languages', async () => {
    const { client, headers } = sdk();
    const response = await client.request({ method: 'GET', url: `${t.baseUrl}/api/v1/models/translate/supported-languages`, headers });
    const languages = (response.data as Array<{ code: string; name: string }>).map((lang) => ({ code: lang.code, name: lang.name }));
    expect(languages).toEqual([
      { code: 'bam_Latn', name: 'Bambara' },
      { code: 'fra_Latn', name: 'French' },
      { code: 'eng_Latn', name: 'English' },
    ]);
    expect(response.headers['link']).toBe('</compat/v1/models/banjugu-1>; rel="successor-version"');
  });

  it("translation.translate: {text} equal to the primary surface's translation of the same text", async () => {
    const { client, headers } = sdk();
    const response = await client.request({
      method: 'POST',
      url: `${t.baseUrl}/api/v1/models/translate`,
      headers,
      data: { text: TEXT, source: 'bam_Latn', target: 'fra_Latn' },
    });
    expect(Object.keys(response.data)).toEqual(['text']);
    expect(response.data.text).toBe(await chat(TEXT, 'bam_Latn', 'fra_Latn'));
    expect(response.data.text.length).toBeGreaterThan(0);
    expect(response.headers['deprecation']).toMatch(/^@\d+$/);
  });

  it('lib/client.js (axiosInstance.post with its own Content-Type) gets the same answer', async () => {
    const instance = axios.create({ baseURL: t.baseUrl, headers: { 'x-api-key': t.apiKey } });
    const response = await instance.post(
      '/api/v1/models/translate',
      { text: TEXT, source: 'bam_Latn', target: 'eng_Latn' },
      { headers: { 'Content-Type': 'application/json' } },
    );
    expect(response.data).toEqual({ text: await chat(TEXT, 'bam_Latn', 'eng_Latn') });
  });
});

describe('the Python SDK request shapes', () => {
  it('requests json= bodies (", " separators, escaped non-ASCII) without the /api prefix too', async () => {
    for (const path of ['/api/v1/models/translate', '/v1/models/translate']) {
      const res = await fetch(`${t.baseUrl}${path}`, {
        method: 'POST',
        headers: {
          'user-agent': 'python-requests/2.32.3',
          'accept-encoding': 'gzip, deflate',
          accept: '*/*',
          connection: 'keep-alive',
          'content-type': 'application/json',
          'x-api-key': t.apiKey,
        },
        body: pythonJson({ text: 'a ka kɛnɛ', source: 'bam_Latn', target: 'fra_Latn' }),
      });
      expect([res.status, res.headers.get('content-type')?.split(';')[0]]).toEqual([200, 'application/json']);
      expect(await res.json()).toEqual({ text: await chat('a ka kɛnɛ', 'bam_Latn', 'fra_Latn') });
    }
  });
});

describe('rules', () => {
  const detailOf = async (res: Response) => {
    expect(res.status).toBe(422);
    return ((await res.json()) as { detail: Array<{ loc: unknown[]; msg: string; type: string }> }).detail.map(({ loc, msg, type }) => ({ loc, msg, type }));
  };

  it('equal languages: one entry at target', async () => {
    expect(await detailOf(await post('/v1/models/translate', JSON.stringify({ text: TEXT, source: 'fra_Latn', target: 'fra_Latn' })))).toEqual([
      { loc: ['body', 'target'], msg: 'Value error, source and target must be different languages', type: 'value_error' },
    ]);
  });

  it('unsupported and missing fields: an entry each', async () => {
    const entries = await detailOf(await post('/v1/models/translate', JSON.stringify({ source: 'fr', target: 'dyu_Latn' })));
    expect(entries).toEqual([
      { loc: ['body', 'text'], msg: 'Field required', type: 'missing' },
      { loc: ['body', 'source'], msg: "Input should be 'bam_Latn', 'fra_Latn' or 'eng_Latn'", type: 'enum' },
      { loc: ['body', 'target'], msg: "Input should be 'bam_Latn', 'fra_Latn' or 'eng_Latn'", type: 'enum' },
    ]);
  });

  it('empty text is 422; whitespace only is 400 {detail}; not JSON is json_invalid', async () => {
    expect(await detailOf(await post('/v1/models/translate', JSON.stringify({ text: '', source: 'bam_Latn', target: 'fra_Latn' })))).toEqual([
      { loc: ['body', 'text'], msg: 'String should have at least 1 character', type: 'string_too_short' },
    ]);
    const blank = await post('/v1/models/translate', JSON.stringify({ text: '  ', source: 'bam_Latn', target: 'fra_Latn' }));
    expect([blank.status, typeof ((await blank.json()) as { detail: unknown }).detail]).toEqual([400, 'string']);
    expect((await detailOf(await post('/v1/models/translate', '{"text"')))[0]!.type).toBe('json_invalid');
  });

  it('x-api-key only: a Bearer header alone is 401 {detail}, on both routes', async () => {
    for (const [method, path] of [
      ['GET', '/api/v1/models/translate/supported-languages'],
      ['POST', '/v1/models/translate'],
    ]) {
      const res = await fetch(`${t.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: '{}' } : {}),
      });
      expect(res.status).toBe(401);
      expect(typeof ((await res.json()) as { detail: unknown }).detail).toBe('string');
    }
  });
});

describe('billing', () => {
  // A response is charged once it was delivered: a moment after the client has it.
  const rowsOf = async (accountId: string) =>
    (await chargesSettled(t), await t.server.store.listUsage({ accountId })).map((r) => [r.model, r.unit, r.quantity, r.costMicros]);

  it('records the same ledger rows as POST /chat/completions translating the same text', async () => {
    const a = await t.newAccount(1_000_000);
    const b = await t.newAccount(1_000_000);
    const text = 'n bɛ taa sugu la sini';
    expect((await post('/api/v1/models/translate', JSON.stringify({ text, source: 'bam_Latn', target: 'eng_Latn' }), a.apiKey)).status).toBe(200);
    await chat(text, 'bam_Latn', 'eng_Latn', b.apiKey);
    const rows = await rowsOf(a.accountId);
    expect(rows).toEqual(await rowsOf(b.accountId));
    expect(rows.map((r) => r.slice(0, 3))).toEqual([['banjugu-1', 'character', [...text].length]]);
  });

  it('random JSON bodies get 200 or 422 (or 400 for whitespace) with a well-formed body, never a 5xx; only 200s are charged', async () => {
    const account = await t.newAccount(100_000_000);
    let served = 0;
    const language = fc.oneof(fc.constantFrom('bam_Latn', 'fra_Latn', 'eng_Latn'), fc.string({ maxLength: 8 }), fc.integer(), fc.constant(null));
    const body = fc.oneof(
      fc.record({ text: fc.oneof(fc.string({ maxLength: 30 }), fc.integer(), fc.constant(null)), source: language, target: language }, { requiredKeys: [] }),
      fc.jsonValue({ maxDepth: 2 }),
    );
    await fc.assert(
      fc.asyncProperty(body, async (value) => {
        const res = await post('/v1/models/translate', JSON.stringify(value), account.apiKey);
        expect([200, 400, 422]).toContain(res.status);
        const parsed = (await res.json()) as { text?: unknown; detail?: unknown };
        if (res.status === 200) {
          served++;
          expect(typeof parsed.text).toBe('string');
        } else if (res.status === 400) expect(typeof parsed.detail).toBe('string');
        else
          for (const entry of parsed.detail as Array<Record<string, unknown>>)
            expect([(entry.loc as unknown[])[0], typeof entry.msg, typeof entry.type]).toEqual(['body', 'string', 'string']);
      }),
      { numRuns: 80 },
    );
    await chargesSettled(t); // charged once the answer was delivered
    expect((await t.server.store.listUsage({ accountId: account.accountId })).length).toBe(served);
  }, 60_000);
});
