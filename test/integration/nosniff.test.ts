/**
 * Every response Kuma writes carries `X-Content-Type-Options: nosniff` (P12 item 12): error bodies echo the
 * path or a model name, and a browser must never sniff one into HTML or script. Checked on each kind of
 * answer: JSON results, errors of the transport and of the API layer (404 naming the path, 405, 401, 400,
 * 413, 415), text (/metrics), a preflight, a HEAD, the 426 of a WebSocket route asked over plain HTTP, and
 * the 101 of an upgrade.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { connect, wsUrl } from '../helpers/websocket-client.js';
import { websocketProbeRoutes } from '../fixtures/websocket-probe-routes.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ extraRoutes: () => websocketProbeRoutes(), config: { maxJsonBodyBytes: 1024 } });
});
afterAll(() => t.close());

describe('X-Content-Type-Options: nosniff', () => {
  const auth = () => ({ authorization: `Bearer ${t.apiKey}` });
  const cases: [string, () => Promise<Response>, number][] = [
    ['a JSON result', () => fetch(`${t.baseUrl}/openai/v1/models`, { headers: auth() }), 200],
    ['404 naming an unknown path', () => fetch(`${t.baseUrl}/openai/v1/<script>alert(1)</script>`, { headers: auth() }), 404],
    ['404 naming an unknown model', () => fetch(`${t.baseUrl}/openai/v1/models/%3Cimg%20src%3Dx%3E`, { headers: auth() }), 404],
    ['405', () => fetch(`${t.baseUrl}/openai/v1/models`, { method: 'DELETE', headers: auth() }), 405],
    ['401', () => fetch(`${t.baseUrl}/openai/v1/models`), 401],
    [
      '400 invalid JSON',
      () => fetch(`${t.baseUrl}/openai/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: '{' }),
      400,
    ],
    [
      '413',
      () =>
        fetch(`${t.baseUrl}/openai/v1/chat/completions`, {
          method: 'POST',
          headers: { ...auth(), 'content-type': 'application/json' },
          body: JSON.stringify({ pad: 'x'.repeat(4096) }),
        }),
      413,
    ],
    ['415', () => fetch(`${t.baseUrl}/openai/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'text/html' }, body: '<b>' }), 415],
    ['text (/metrics)', () => fetch(`${t.baseUrl}/metrics`), 200],
    ['/healthz', () => fetch(`${t.baseUrl}/healthz`), 200],
    ['HEAD', () => fetch(`${t.baseUrl}/healthz`, { method: 'HEAD' }), 200],
    [
      'a preflight',
      () => fetch(`${t.baseUrl}/openai/v1/models`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' } }),
      204,
    ],
    ['426 for a WebSocket route over plain HTTP', () => fetch(`${t.baseUrl}/openai/v1/probe/ws/echo`, { headers: auth() }), 426],
  ];
  it.each(cases)('%s', async (_name, request, status) => {
    const res = await request();
    await res.arrayBuffer();
    expect(res.status).toBe(status);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('an upgrade refused (401) and an upgrade accepted (101)', async () => {
    const refused = await connect(wsUrl(t.baseUrl, '/openai/v1/probe/ws/echo'));
    expect(refused).toMatchObject({ kind: 'refused', status: 401 });
    if (refused.kind === 'refused') expect(refused.headers['x-content-type-options']).toBe('nosniff');
    const opened = await connect(wsUrl(t.baseUrl, '/openai/v1/probe/ws/echo'), { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(opened.kind).toBe('open');
    if (opened.kind === 'open') {
      expect(opened.response.headers['x-content-type-options']).toBe('nosniff');
      opened.ws.close();
    }
  });
});
