/**
 * The access log over HTTP: every request, however it is answered, writes exactly one JSON line whose
 * request id, method, route, path and status are those the client saw, with pino's ISO time; and no
 * credential reaches it. (The line is written by its own logger without the redaction pass: these tests
 * are what says that it still carries no key.)
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 40);
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface AccessLine {
  level: number;
  time: string;
  service: string;
  requestId: string;
  method: string;
  route: string;
  path: string;
  status: number;
  ms: number;
  aborted: boolean;
  msg: string;
}

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

function accessLinesOf(requestId: string): AccessLine[] {
  return t.logs.map((line) => JSON.parse(line) as AccessLine).filter((line) => line.msg === 'request' && line.requestId === requestId);
}

/** Sends a request and returns what the client saw and the access-log lines of its request id. */
async function exchange(method: string, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.baseUrl}${path}`, { method, headers });
  await res.arrayBuffer();
  const requestId = res.headers.get('x-request-id')!;
  expect(requestId).toMatch(/^req_[0-9a-f]{24}$/);
  await expect.poll(() => accessLinesOf(requestId).length).toBeGreaterThan(0);
  return { status: res.status, requestId, lines: accessLinesOf(requestId) };
}

describe('access log', () => {
  it.each([
    ['a served request', 'GET', '/compat/v1/models', true, 200, '/compat/v1/models'],
    ['HEAD', 'HEAD', '/openai/v1/models', true, 200, '/openai/v1/models'],
    ['no key', 'GET', '/compat/v1/models', false, 401, '/compat/v1/models'],
    ['an unknown model', 'GET', '/compat/v1/models/nope', true, 404, '/compat/v1/models/:model'],
    ['an unknown path', 'GET', '/compat/v1/nowhere', true, 404, 'unmatched'],
    ['a wrong method', 'DELETE', '/compat/v1/models', true, 405, 'unmatched'],
    ['a preflight', 'OPTIONS', '/compat/v1/models', false, 204, 'preflight'],
  ] as const)('%s: one line with what the client saw', async (_name, method, path, withKey, status, route) => {
    const headers: Record<string, string> = withKey ? { authorization: `Bearer ${t.apiKey}` } : {};
    if (method === 'OPTIONS') Object.assign(headers, { origin: 'https://example.test', 'access-control-request-method': 'GET' });
    const seen = await exchange(method, path, headers);
    expect(seen.status).toBe(status);
    expect(seen.lines).toHaveLength(1);
    const line = seen.lines[0]!;
    expect(line).toMatchObject({ level: 30, service: 'kuma', method, route, path, status, aborted: false });
    expect(line.time).toMatch(ISO_TIME);
    expect(line.ms).toBeGreaterThanOrEqual(0);
  });

  it('any path: exactly one line, its status and path those of the response, and the key nowhere in it', async () => {
    // No segment of only dots: clients resolve `.` and `..` before sending.
    const segment = fc.stringMatching(/^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,11}$/);
    await fc.assert(
      fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 3 }), fc.boolean(), async (segments, withKey) => {
        const path = `/compat/v1/${segments.join('/')}`;
        const seen = await exchange('GET', path, withKey ? { authorization: `Bearer ${t.apiKey}` } : {});
        expect(seen.lines).toHaveLength(1);
        expect(seen.lines[0]!.status).toBe(seen.status);
        expect(seen.lines[0]!.path).toBe(path);
        expect(JSON.stringify(seen.lines[0])).not.toContain(t.apiKey);
      }),
      { numRuns: RUNS, seed: 16 },
    );
  });

  it('lines come in the order the responses were sent, with non-decreasing times', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await exchange('GET', '/compat/v1/models', { authorization: `Bearer ${t.apiKey}` })).requestId);
    const lines = t.logs.map((l) => JSON.parse(l) as AccessLine).filter((l) => ids.includes(l.requestId));
    expect(lines.map((l) => l.requestId)).toEqual(ids);
    const times = lines.map((l) => Date.parse(l.time));
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });
});
