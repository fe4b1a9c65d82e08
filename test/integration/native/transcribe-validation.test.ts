/**
 * What the native transcribe routes refuse, in the shapes the Djelia SDKs read: 422 with a `detail` array of
 * pydantic-worded entries for each validation rule (all problems at once, query before body), `{detail:
 * "..."}` with the primary surface's status for the rest (400 undecodable or empty file, 413 over the upload
 * limit, 401 without an x-api-key). Random query values and form fields never make it answer 5xx.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/test-server.js';
import { spokenPhrases, wavBytes } from '../../helpers/audio.js';
import { jsSdkTranscribe } from './transcribe-clients.js';

const wav = wavBytes(spokenPhrases(['i ni ce']).samples, 16000);
const MAX_UPLOAD_BYTES = 256 * 1024;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({
    clock: () => new Date('2026-09-01T00:00:00Z'),
    config: { modelsManifest: 'models/kuma-models.json', demoPack: false, maxUploadBytes: MAX_UPLOAD_BYTES },
  });
  await t.server.enginesReady;
}, 120_000);
afterAll(() => t.close());

function post(query: string, body?: RequestInit['body'], headers: Record<string, string> = {}, path = '/api/v2/models/transcribe'): Promise<Response> {
  return fetch(`${t.baseUrl}${path}${query}`, { method: 'POST', headers: { 'x-api-key': t.apiKey, ...headers }, body });
}

function withFile(file: Blob | string | null = new Blob([wav]), fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (typeof file === 'string') form.append('file', file);
  else if (file) form.append('file', file, 'speech.wav');
  return form;
}

const MISSING_FILE = { loc: ['body', 'file'], msg: 'Field required', type: 'missing', input: null };
const badFlag = (input: string) => ({
  loc: ['query', 'translate_to_french'],
  msg: 'Input should be a valid boolean, unable to interpret input',
  type: 'bool_parsing',
  input,
});

describe('422 detail entries', () => {
  it('no file: Field required', async () => {
    const res = await post('', withFile(null, { translate_to_french: 'true' }));
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ detail: [MISSING_FILE] });
  });

  it('a JSON body (not a form at all): the file is missing, as FastAPI reads an empty form', async () => {
    const res = await post('', JSON.stringify({ file: 'x' }), { 'content-type': 'application/json' });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ detail: [MISSING_FILE] });
  });

  it('file sent as a text field: Expected UploadFile', async () => {
    const res = await post('', withFile('not a file'));
    expect(await res.json()).toEqual({
      detail: [{ loc: ['body', 'file'], msg: "Value error, Expected UploadFile, received: <class 'str'>", type: 'value_error', input: 'not a file' }],
    });
  });

  it('translate_to_french that is no boolean: bool_parsing, and with no file both problems, query first', async () => {
    const res = await post('?translate_to_french=maybe', withFile());
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ detail: [badFlag('maybe')] });
    const both = await post('?translate_to_french=2', withFile(null), {}, '/v1/models/transcribe/stream');
    expect(both.status).toBe(422);
    expect(await both.json()).toEqual({ detail: [badFlag('2'), MISSING_FILE] });
  });
});

describe('translate_to_french accepts what FastAPI takes for a bool, and null', () => {
  it.each([
    ['TRUE', 'object'],
    ['yes', 'object'],
    ['On', 'object'],
    ['1', 'object'],
    ['t', 'object'],
    ['False', 'array'],
    ['no', 'array'],
    ['off', 'array'],
    ['0', 'array'],
    ['', 'array'],
    ['null', 'array'],
  ])('%j → %s', async (value, shape) => {
    const res = await post(`?translate_to_french=${value}`, withFile());
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(Array.isArray(body) ? 'array' : 'object').toBe(shape);
  });

  it('repeated, the last one counts', async () => {
    expect(await (await post('?translate_to_french=true&translate_to_french=false', withFile())).json()).toBeInstanceOf(Array);
  });
});

describe('other refusals as {detail: "..."} with the primary surface\'s status', () => {
  it('an empty file: 400, also from the JS SDK given an empty Buffer (still a file part)', async () => {
    const res = await post('', withFile(new Blob([])));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ detail: expect.stringMatching(/empty/) });
    const err = await jsSdkTranscribe({ baseUrl: t.baseUrl, apiKey: t.apiKey }, Buffer.alloc(0)).catch((e) => e);
    expect(err.response.status).toBe(400);
    expect(err.response.data).toEqual({ detail: expect.stringMatching(/empty/) });
  });

  it('a file that is not audio: 400 naming the file', async () => {
    const res = await post('', withFile(new Blob([Buffer.from('this is not audio at all, just some text '.repeat(20))])), {}, '/v1/models/transcribe/stream');
    expect(res.status).toBe(400);
    const body = (await res.json()) as { detail: string };
    expect(typeof body.detail).toBe('string');
    expect(body.detail).toMatch(/file/i);
    expect(body.detail).not.toMatch(/ at .*\.ts/); // no stack
  });

  it('an upload over the limit: 413', async () => {
    const res = await post('', withFile(new Blob([Buffer.alloc(MAX_UPLOAD_BYTES + 1024)])));
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ detail: expect.any(String) });
  });

  it('a Bearer key alone: 401 (the native surface takes x-api-key only), and no key at all', async () => {
    const bearer = await fetch(`${t.baseUrl}/api/v2/models/transcribe`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: withFile() });
    expect(bearer.status).toBe(401);
    expect(await bearer.json()).toEqual({ detail: expect.any(String) });
    const none = await fetch(`${t.baseUrl}/v1/models/transcribe/stream`, { method: 'POST', body: withFile() });
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ detail: expect.any(String) });
  });

  it('refused requests are not charged', async () => {
    const account = await t.newAccount(1_000_000);
    for (const body of [withFile(null), withFile(new Blob([])), withFile(new Blob([Buffer.from('garbage'.repeat(50))]))]) {
      await (await fetch(`${t.baseUrl}/api/v2/models/transcribe`, { method: 'POST', headers: { 'x-api-key': account.apiKey }, body })).text();
    }
    expect(await t.server.store.listUsage({ accountId: account.accountId })).toEqual([]);
    expect((await t.server.store.getAccount(account.accountId))!.balanceMicros).toBe(1_000_000);
  });
});

describe('for all inputs', () => {
  it('random query values and form fields: 200 or 422 with well-formed detail entries, never 5xx', async () => {
    const word = fc.oneof(fc.constantFrom('true', 'false', 'TRUE', 'no', '', 'null', '1', '0'), fc.string({ maxLength: 8 }));
    await fc.assert(
      fc.asyncProperty(
        fc.option(word, { nil: undefined }),
        fc.constantFrom<'file' | 'none' | 'text'>('file', 'none', 'text'),
        fc.dictionary(fc.stringMatching(/^[a-z_]{1,10}$/), fc.string({ maxLength: 16 }), { maxKeys: 3 }),
        fc.boolean(),
        async (flag, fileKind, fields, stream) => {
          const { file: _dropped, ...others } = fields;
          const form = withFile(fileKind === 'file' ? new Blob([wav]) : fileKind === 'text' ? 'text' : null, others);
          const query = flag === undefined ? '' : `?translate_to_french=${encodeURIComponent(flag)}`;
          const res = await post(query, form, {}, `/api/v1/models/transcribe${stream ? '/stream' : ''}`);
          const text = await res.text();
          expect([200, 422]).toContain(res.status);
          if (res.status === 422) {
            const body = JSON.parse(text) as { detail: unknown[] };
            expect(body.detail.length).toBeGreaterThan(0);
            for (const entry of body.detail as Record<string, unknown>[]) {
              expect(Object.keys(entry).sort()).toEqual(['input', 'loc', 'msg', 'type']);
              expect(['query', 'body']).toContain((entry.loc as string[])[0]);
              expect(typeof entry.msg).toBe('string');
              expect(typeof entry.type).toBe('string');
            }
          }
        },
      ),
      { seed: 12_2026, numRuns: Number(process.env.KUMA_PROPERTY_RUNS ?? 25) },
    );
  }, 120_000);
});
