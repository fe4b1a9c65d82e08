/** Every error path of the transport and the API layer: status, type, code and param of the envelope. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { parseRequest } from '../../src/api/validation.js';
import type { RouteDef } from '../../src/api/types.js';

const ProbeSchema = z.object({ name: z.string(), count: z.number().int().min(1).max(10), options: z.object({ mode: z.enum(['a', 'b']) }).optional() });

const probes: RouteDef[] = [
  {
    method: 'POST',
    path: '/test/validate',
    surface: 'compat',
    auth: true,
    handler: async (req) => ({ kind: 'json', body: parseRequest(ProbeSchema, await req.body.json()) }),
  },
  {
    method: 'POST',
    path: '/test/upload',
    surface: 'compat',
    auth: true,
    handler: async (req) => {
      const form = await req.body.multipart();
      try {
        return { kind: 'json', body: { fields: form.fields, size: form.files.file?.size ?? null } };
      } finally {
        await form.dispose();
      }
    },
  },
  {
    method: 'GET',
    path: '/test/crash',
    surface: 'compat',
    auth: true,
    handler: async () => {
      throw new Error('secret internals at /srv/kuma/db.ts:42');
    },
  },
];

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ config: { maxJsonBodyBytes: 1024, maxUploadBytes: 4096 }, extraRoutes: () => probes });
});
afterAll(() => t.close());

const auth = () => ({ authorization: `Bearer ${t.apiKey}` });

async function envelope(res: Response, status: number, code: string | null, param: string | null, type = 'invalid_request_error') {
  expect(res.status).toBe(status);
  expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{24}$/);
  const body = (await res.json()) as any;
  expect(body).toEqual({ error: { message: expect.any(String), type, param, code } });
  return body.error.message as string;
}

describe('error envelope', () => {
  it('unknown endpoint is 404 unknown_endpoint, on and off the API prefixes', async () => {
    await envelope(await fetch(`${t.baseUrl}/compat/v1/nope`, { headers: auth() }), 404, 'unknown_endpoint', null);
    await envelope(await fetch(`${t.baseUrl}/openai/v1/audio/nothing`, { headers: auth() }), 404, 'unknown_endpoint', null);
    await envelope(await fetch(`${t.baseUrl}/`), 404, 'unknown_endpoint', null); // KUMA_STUDIO off (the test servers' default)
    await envelope(await fetch(`${t.baseUrl}/studio/nothing.js`), 404, 'unknown_endpoint', null);
  });

  it('wrong method on a real path is 405 method_not_allowed with Allow', async () => {
    const res = await fetch(`${t.baseUrl}/compat/v1/models`, { method: 'POST', headers: auth(), body: '{}' });
    expect(res.headers.get('allow')).toBe('GET');
    await envelope(res, 405, 'method_not_allowed', null);
    await envelope(await fetch(`${t.baseUrl}/openai/v1/models/whisper-1`, { method: 'DELETE', headers: auth() }), 405, 'method_not_allowed', null);
  });

  it('malformed JSON is 400 invalid_json', async () => {
    const res = await fetch(`${t.baseUrl}/compat/v1/test/validate`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: '{"name": "x",',
    });
    expect(await envelope(res, 400, 'invalid_json', null)).toMatch(/could not parse the JSON/);
    const empty = await fetch(`${t.baseUrl}/compat/v1/test/validate`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: '' });
    await envelope(empty, 400, 'invalid_json', null);
  });

  it('a missing field is 400 missing_required_parameter naming the param', async () => {
    const res = await fetch(`${t.baseUrl}/compat/v1/test/validate`, { method: 'POST', headers: auth(), body: JSON.stringify({ count: 2 }) });
    expect(await envelope(res, 400, 'missing_required_parameter', 'name')).toBe('name: Field required');
  });

  it('an invalid field is 400 invalid_value naming the param, nested paths dotted', async () => {
    const post = (body: unknown) => fetch(`${t.baseUrl}/compat/v1/test/validate`, { method: 'POST', headers: auth(), body: JSON.stringify(body) });
    await envelope(await post({ name: 'x', count: 99 }), 400, 'invalid_value', 'count');
    await envelope(await post({ name: 'x', count: 'two' }), 400, 'invalid_value', 'count');
    await envelope(await post({ name: 'x', count: 1, options: { mode: 'c' } }), 400, 'invalid_value', 'options.mode');
  });

  it('an oversize JSON body is 413 request_too_large', async () => {
    const res = await fetch(`${t.baseUrl}/compat/v1/test/validate`, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify({ name: 'x'.repeat(5000), count: 1 }),
    });
    await envelope(res, 413, 'request_too_large', null);
  });

  it('an unsupported content type is 415', async () => {
    const res = await fetch(`${t.baseUrl}/compat/v1/test/validate`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/xml' },
      body: '<a/>',
    });
    await envelope(res, 415, 'unsupported_content_type', null);
    const form = await fetch(`${t.baseUrl}/compat/v1/test/upload`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: '{}' });
    await envelope(form, 415, 'unsupported_content_type', null);
  });

  it('an upload over the size limit is 413 audio_too_large naming the file field', async () => {
    const form = new FormData();
    form.append('model', 'sunjata-1');
    form.append('file', new Blob([new Uint8Array(10_000)]), 'a.wav');
    const res = await fetch(`${t.baseUrl}/compat/v1/test/upload`, { method: 'POST', headers: auth(), body: form });
    await envelope(res, 413, 'audio_too_large', 'file');
  });

  it('a multipart body with no final boundary is 400 invalid_multipart', async () => {
    const body =
      '--XyZ\r\nContent-Disposition: form-data; name="model"\r\n\r\nsunjata-1\r\n--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nabc';
    const res = await fetch(`${t.baseUrl}/compat/v1/test/upload`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'multipart/form-data; boundary=XyZ' },
      body,
    });
    await envelope(res, 400, 'invalid_multipart', null);
  });

  it('an internal failure is 500 api_error with no internals in the body', async () => {
    const res = await fetch(`${t.baseUrl}/compat/v1/test/crash`, { headers: auth() });
    const text = await res.text();
    expect(res.status).toBe(500);
    expect(JSON.parse(text)).toEqual({ error: { message: expect.any(String), type: 'api_error', param: null, code: 'server_error' } });
    expect(text).not.toMatch(/secret|internals|\.ts|at /);
  });

  it('a chunked multipart upload with no Content-Length is parsed', async () => {
    const enc = new TextEncoder();
    const parts = [
      '--B\r\nContent-Disposition: form-data; name="file"; filename="x.wav"\r\n\r\n',
      'RIFF1234',
      '\r\n--B\r\nContent-Disposition: form-data; name="timestamp_granularities[]"\r\n\r\nword\r\n',
      '--B\r\nContent-Disposition: form-data; name="djelia[chunk_size]"\r\n\r\n0.5\r\n--B--\r\n',
    ];
    const stream = new ReadableStream({
      async pull(controller) {
        const next = parts.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(enc.encode(next));
      },
    });
    const res = await fetch(`${t.baseUrl}/compat/v1/test/upload`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'multipart/form-data; boundary=B' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ fields: { timestamp_granularities: ['word'], djelia: { chunk_size: '0.5' } }, size: 8 });
  });
});
