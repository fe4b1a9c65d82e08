/**
 * Request smuggling (P12 item 3): a request whose framing a proxy could read differently — more than one
 * Content-Length (even equal ones), Content-Length with Transfer-Encoding, more than one Transfer-Encoding,
 * a Transfer-Encoding other than `chunked` — gets one 400 and the connection is closed, and no request
 * hidden behind it (in the same packet or in a later one) ever reaches a route. A probe route counts every
 * request that reaches it, and the access log shows every request the application saw.
 */
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RouteDef } from '../../src/api/types.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

let t: TestServer;
let hits: string[] = [];

/** GET and POST /probe/hit: a route with a visible side effect (every request that reaches it is counted). */
function hitRoutes(): RouteDef[] {
  return (['GET', 'POST'] as const).map((method) => ({
    method,
    path: '/probe/hit',
    surface: 'compat' as const,
    auth: false,
    handler: async (req) => {
      hits.push(`${req.method} ${req.query.get('n') ?? ''}`);
      return { kind: 'json' as const, body: { hit: true } };
    },
  }));
}

beforeAll(async () => {
  t = await startTestServer({ extraRoutes: () => hitRoutes() });
});
afterAll(() => t.close());
beforeEach(() => {
  hits = [];
});

const HIDDEN = 'GET /openai/v1/probe/hit?n=hidden HTTP/1.1\r\nHost: kuma\r\n\r\n';

/**
 * The first request's head and body: each framing a front proxy and Kuma could disagree on, with the hidden
 * request placed where one of the readings takes it for the next request.
 */
const FRAMINGS: Record<string, string> = {
  'Content-Length 0 then N': `Content-Length: 0\r\nContent-Length: ${HIDDEN.length}\r\n\r\n`,
  'Content-Length N then 0': `Content-Length: ${HIDDEN.length}\r\nContent-Length: 0\r\n\r\n`,
  'Content-Length N then N': `Content-Length: ${HIDDEN.length}\r\nContent-Length: ${HIDDEN.length}\r\n\r\n`,
  'Content-Length N then M': `Content-Length: ${HIDDEN.length}\r\nContent-Length: ${HIDDEN.length + 7}\r\n\r\n`,
  'Content-Length 0 then 0': 'Content-Length: 0\r\nContent-Length: 0\r\n\r\n',
  'Content-Length then Transfer-Encoding': 'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'Transfer-Encoding then Content-Length': 'Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n',
  'Transfer-Encoding twice': 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'Transfer-Encoding identity': 'Transfer-Encoding: identity\r\n\r\n',
  'Transfer-Encoding gzip, chunked': 'Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n',
};

interface Exchange {
  text: string;
  /** The server closed the connection (EOF or reset) without the client closing it. */
  closedByServer: boolean;
}

/**
 * Sends `first`, then `later` once the first answer has arrived (a later packet, if the connection is still
 * open), and reads until the server closes the connection or `waitMs` passes. The client never closes first.
 */
function exchange(first: string, later: string | null, waitMs = 3000): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = net.connect(t.server.port, '127.0.0.1');
    let text = '';
    let sentLater = false;
    const done = (closedByServer: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedByServer });
    };
    const timer = setTimeout(() => done(false), waitMs);
    socket.on('data', (d) => {
      text += d.toString('latin1');
      if (later !== null && !sentLater) {
        sentLater = true;
        setTimeout(() => socket.writable && socket.write(later), 50);
      }
    });
    socket.on('error', () => {}); // a write after the server's close: the close is what is checked
    socket.on('close', () => done(true));
    socket.write(first);
  });
}

const responsesIn = (text: string) => text.match(/HTTP\/1\.1 \d{3} /g) ?? [];

/** Every access-log line of the hidden request's path (the application saw it) — none may exist. */
const hiddenInAccessLog = () =>
  t.logs.filter((line) => line.includes('"msg":"request"') && line.includes('/openai/v1/probe/hit') && !line.includes('"status":400'));

describe('request smuggling', () => {
  it('control: a pipelined pair with one Content-Length each is served twice (the probe counts what reaches it)', async () => {
    const body = '{}';
    const answer = await exchange(
      `POST /openai/v1/probe/hit?n=first HTTP/1.1\r\nHost: kuma\r\nContent-Length: ${body.length}\r\n\r\n${body}${HIDDEN.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')}`,
      null,
    );
    expect(responsesIn(answer.text)).toEqual(['HTTP/1.1 200 ', 'HTTP/1.1 200 ']);
    expect(hits).toEqual(['POST first', 'GET hidden']);
  });

  for (const [name, framing] of Object.entries(FRAMINGS)) {
    for (const where of ['same packet', 'later packet'] as const) {
      it(`${name}, hidden request in the ${where}: one 400, then the connection is closed, nothing hidden served`, async () => {
        const logsBefore = hiddenInAccessLog().length;
        const first = `POST /openai/v1/probe/hit?n=first HTTP/1.1\r\nHost: kuma\r\n${framing}`;
        const answer = where === 'same packet' ? await exchange(first + HIDDEN, null) : await exchange(first, HIDDEN);
        expect(responsesIn(answer.text), answer.text.slice(0, 300)).toEqual(['HTTP/1.1 400 ']);
        expect(answer.closedByServer).toBe(true);
        // Give a hidden request every chance to be dispatched before looking.
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(hits).toEqual([]);
        expect(hiddenInAccessLog().length).toBe(logsBefore);
      });
    }
  }

  it('property: any head with two or more framing headers, in any order and with any values, gets one 400 and nothing behind it is served', async () => {
    const framingHeader = fc.oneof(
      fc.nat({ max: 200 }).map((n) => `Content-Length: ${n}`),
      fc.constantFrom('chunked', 'Chunked', ' chunked', 'identity', 'gzip, chunked', 'chunked, chunked', '').map((v) => `Transfer-Encoding: ${v}`),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(framingHeader, { minLength: 2, maxLength: 4 }), fc.boolean(), async (headers, later) => {
        hits = [];
        const first = `POST /openai/v1/probe/hit HTTP/1.1\r\nHost: kuma\r\n${headers.join('\r\n')}\r\n\r\n0\r\n\r\n`;
        const answer = later ? await exchange(first, HIDDEN) : await exchange(first + HIDDEN, null);
        expect(responsesIn(answer.text)).toEqual(['HTTP/1.1 400 ']);
        expect(answer.closedByServer).toBe(true);
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(hits).toEqual([]);
      }),
      { numRuns: 40 },
    );
  }, 60_000);

  it('an upgrade request with two Content-Length headers is refused the same way, before any WebSocket opens', async () => {
    const head = `GET /openai/v1/realtime HTTP/1.1\r\nHost: kuma\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\nContent-Length: ${HIDDEN.length}\r\n\r\n`;
    const answer = await exchange(head + HIDDEN, null);
    expect(responsesIn(answer.text)).toEqual(['HTTP/1.1 400 ']);
    expect(answer.closedByServer).toBe(true);
    expect(hits).toEqual([]);
  });

  it('the 400 Kuma writes itself is the error envelope with x-request-id and nosniff, and the refusal is logged and counted', async () => {
    const answer = await exchange(`POST /openai/v1/probe/hit HTTP/1.1\r\nHost: kuma\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}`, null);
    const [head, body] = [answer.text.slice(0, answer.text.indexOf('\r\n\r\n')), answer.text.slice(answer.text.indexOf('\r\n\r\n') + 4)];
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toMatch(/^x-request-id: req_/im);
    expect(head).toMatch(/^x-content-type-options: nosniff$/im);
    expect(head).toMatch(/^connection: close$/im);
    expect(JSON.parse(body)).toEqual({
      error: { message: 'More than one Content-Length header.', type: 'invalid_request_error', param: null, code: 'malformed_request' },
    });
    const requestId = /^x-request-id: (\S+)/im.exec(head)![1]!;
    expect(t.logs.find((line) => line.includes(requestId) && line.includes('"status":400'))).toBeDefined();
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/kuma_http_requests_total\{method="POST",route="unmatched",status="400"\} [1-9]/);
  });
});

describe('request smuggling over TLS', () => {
  let secure: TestServer;
  beforeAll(async () => {
    secure = await startTestServer({
      extraRoutes: () => hitRoutes(),
      config: { tlsCert: 'test/fixtures/tls/localhost-cert.pem', tlsKey: 'test/fixtures/tls/localhost-key.pem' },
    });
  });
  afterAll(() => secure.close());

  it('the 400 goes out before the close there too (uWS writes it through TLS), and nothing hidden is served', async () => {
    hits = [];
    const ca = fs.readFileSync('test/fixtures/tls/localhost-cert.pem');
    const text = await new Promise<string>((resolve) => {
      const socket = tls.connect({ port: secure.server.port, host: '127.0.0.1', ca, servername: 'localhost' }, () => {
        socket.write(`POST /openai/v1/probe/hit HTTP/1.1\r\nHost: kuma\r\nContent-Length: 0\r\nContent-Length: ${HIDDEN.length}\r\n\r\n${HIDDEN}`);
      });
      let received = '';
      socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
      socket.on('error', () => {});
      socket.on('close', () => resolve(received));
    });
    expect(responsesIn(text)).toEqual(['HTTP/1.1 400 ']);
    expect(text).toContain('"code":"malformed_request"');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hits).toEqual([]);
  });
});
