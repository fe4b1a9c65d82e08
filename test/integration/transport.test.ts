/** Transport behaviour seen by clients: request ids, CORS, ops endpoints, the OpenAPI document, graceful shutdown. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import type { RouteDef } from '../../src/api/types.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

describe('transport', () => {
  it('every response carries x-request-id, errors and successes alike', async () => {
    const ids = new Set<string>();
    for (const [path, status] of [
      ['/compat/v1/models', 401],
      ['/healthz', 200],
      ['/nope', 404],
    ] as const) {
      const res = await fetch(t.baseUrl + path);
      expect(res.status).toBe(status);
      const id = res.headers.get('x-request-id');
      expect(id).toMatch(/^req_/);
      ids.add(id!);
    }
    expect(ids.size).toBe(3);
  });

  it('answers a CORS preflight with 204 and the requested headers allowed', async () => {
    const res = await fetch(`${t.baseUrl}/openai/v1/audio/transcriptions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, x-stainless-os',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type, x-stainless-os');
    expect(res.headers.get('access-control-allow-methods')).toContain('POST');
    const plain = await fetch(`${t.baseUrl}/compat/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}`, origin: 'https://app.example' } });
    expect(plain.headers.get('access-control-allow-origin')).toBe('*');
    expect(plain.headers.get('access-control-expose-headers')).toContain('x-request-id');
  });

  it('serves /healthz, /readyz and Prometheus /metrics with request counts by route and status', async () => {
    expect(await (await fetch(`${t.baseUrl}/healthz`)).json()).toEqual({ status: 'ok', pid: process.pid });
    const ready = await fetch(`${t.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as any).status).toBe('ready');
    await fetch(`${t.baseUrl}/compat/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    const metrics = await fetch(`${t.baseUrl}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await metrics.text();
    expect(text).toMatch(/kuma_http_requests_total\{method="GET",route="\/compat\/v1\/models",status="200"\} \d+/);
    expect(text).toMatch(/kuma_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/compat\/v1\/models"\}/);
  });

  it('publishes an OpenAPI 3.1 document built from the schemas, under both prefixes', async () => {
    const doc = (await (await fetch(`${t.baseUrl}/compat/v1/openapi.json`)).json()) as any;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: '/compat/v1' }, { url: '/openai/v1' }]);
    expect(doc.paths['/models'].get.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ModelList' });
    expect(doc.paths['/models/{model}'].get.parameters[0]).toMatchObject({ name: 'model', in: 'path' });
    expect(doc.components.schemas.ModelList.properties.data.items).toEqual({ $ref: '#/components/schemas/ModelObject' });
    expect(doc.components.schemas.OpenAIError.properties.error.required).toEqual(['message', 'type', 'param', 'code']);
    expect(await (await fetch(`${t.baseUrl}/openai/v1/openapi.json`)).json()).toEqual(doc);
  });
});

describe('graceful shutdown', () => {
  it('finishes in-flight requests, refuses new connections, and cancels work past the grace period', async () => {
    let sawAbort = false;
    const routes: RouteDef[] = [
      { method: 'GET', path: '/test/slow', surface: 'compat', auth: false, handler: async () => (await sleep(300), { kind: 'json', body: { done: true } }) },
      {
        method: 'GET',
        path: '/test/forever',
        surface: 'compat',
        auth: false,
        handler: (req) =>
          new Promise((_, reject) =>
            req.signal.addEventListener('abort', () => {
              sawAbort = true;
              reject(req.signal.reason);
            }),
          ),
      },
    ];
    const s = await startTestServer({ config: { shutdownGraceMs: 800 }, extraRoutes: () => routes });
    const slow = fetch(`${s.baseUrl}/compat/v1/test/slow`);
    const forever = fetch(`${s.baseUrl}/compat/v1/test/forever`).catch((e) => e);
    await sleep(50);
    const closing = s.close();
    await sleep(50);
    await expect(fetch(`${s.baseUrl}/healthz`)).rejects.toThrow();
    const res = await slow;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ done: true });
    await closing;
    expect(sawAbort).toBe(true);
    await forever;
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
