/**
 * The WebSocket transport seen by a `ws` client: the upgrade goes through the same routing, auth and
 * errors as HTTP; frames are echoed intact; limits close with clear codes; a handler bug costs one socket.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { closed, connect, nextMessage, nextText, open, wsUrl } from '../helpers/websocket-client.js';
import { websocketProbeRoutes } from '../fixtures/websocket-probe-routes.js';
import { maskedFrame, rawUpgrade } from '../helpers/hostile-sockets.js';
import { OPCODE } from '../../load-tests/realtime/websocket-frames.js';

let t: TestServer;
let url: (path: string) => string;
beforeAll(async () => {
  t = await startTestServer({ extraRoutes: () => websocketProbeRoutes() });
  url = (path) => wsUrl(t.baseUrl, path);
});
afterAll(() => t.close());

const bearer = () => ({ headers: { authorization: `Bearer ${t.apiKey}` } });

describe('WebSocket upgrade', () => {
  it('upgrades with a Bearer key, answers 101 with x-request-id, and echoes text and binary frames', async () => {
    const result = await connect(url('/openai/v1/probe/ws/echo'), bearer());
    expect(result.kind).toBe('open');
    if (result.kind !== 'open') return;
    const ws = result.ws;
    expect(result.response.headers['x-request-id']).toMatch(/^req_/);
    ws.send('héllo wörld');
    expect(await nextText(ws)).toBe('héllo wörld');
    const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256));
    ws.send(bytes);
    const back = await nextMessage(ws);
    expect(back.isBinary).toBe(true);
    expect(Buffer.compare(back.data, bytes)).toBe(0);
    ws.send('whoami');
    expect(JSON.parse(await nextText(ws)).requestId).toBe(result.response.headers['x-request-id']);
    ws.close(1000);
    expect((await closed(ws)).code).toBe(1000);
  });

  it('upgrades with x-api-key, and with the key as a subprotocol (answering `realtime`)', async () => {
    const byHeader = await open(url('/compat/v1/probe/ws/echo'), { headers: { 'x-api-key': t.apiKey } });
    byHeader.close();
    const browser = await open(url('/openai/v1/probe/ws/echo'), { protocols: ['realtime', `openai-insecure-api-key.${t.apiKey}`] });
    expect(browser.protocol).toBe('realtime');
    browser.send('ping');
    expect(await nextText(browser)).toBe('ping');
    browser.close();
  });

  it('refuses before the upgrade with the HTTP error envelope: 401, 404, 402', async () => {
    const noKey = await connect(url('/openai/v1/probe/ws/echo'));
    expect(noKey).toMatchObject({ kind: 'refused', status: 401, body: { error: { code: 'invalid_api_key', type: 'authentication_error' } } });
    if (noKey.kind === 'refused') expect(noKey.headers['x-request-id']).toMatch(/^req_/);
    const badSubprotocolKey = await connect(url('/openai/v1/probe/ws/echo'), {
      protocols: ['realtime', 'openai-insecure-api-key.00000000-0000-4000-8000-000000000000'],
    });
    expect(badSubprotocolKey).toMatchObject({ kind: 'refused', status: 401 });
    const unknown = await connect(url('/openai/v1/no/such/socket'), bearer());
    expect(unknown).toMatchObject({ kind: 'refused', status: 404, body: { error: { code: 'unknown_endpoint' } } });
    const broke = await t.newAccount(0);
    const empty = await connect(url('/openai/v1/probe/ws/echo'), { headers: { authorization: `Bearer ${broke.apiKey}` } });
    expect(empty).toMatchObject({ kind: 'refused', status: 402, body: { error: { code: 'insufficient_quota' } } });
  });

  it('answers a plain GET of a WebSocket route 426, and an upgrade of a JSON route with its JSON', async () => {
    const plain = await fetch(`${t.baseUrl}/openai/v1/probe/ws/echo`, bearer());
    expect(plain.status).toBe(426);
    expect(((await plain.json()) as any).error.code).toBe('upgrade_required');
    const json = await connect(url('/openai/v1/probe/ws/plain'), bearer());
    expect(json).toMatchObject({ kind: 'refused', status: 200, body: { plain: true } });
    // Ordinary HTTP still reaches the HTTP handler beside the ws route.
    expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
  });

  it('answers an upgrade request that says Connection: close with 426, not a 101 on a socket about to close', async () => {
    // uWS would send the 101 and then end the socket (a `close` request's socket ends after its response).
    const port = Number(new URL(t.baseUrl).port);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(
          [
            'GET /openai/v1/probe/ws/echo HTTP/1.1',
            'Host: kuma',
            `Authorization: Bearer ${t.apiKey}`,
            'Upgrade: websocket',
            'Connection: close',
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
            'Sec-WebSocket-Version: 13',
            '',
            '',
          ].join('\r\n'),
        );
      });
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString('latin1')));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 426 /);
    expect(answer).toContain('upgrade_required');
  });
});

describe('WebSocket frames and failures', () => {
  it('echoes a large binary frame (8 MiB) intact', async () => {
    const ws = await open(url('/openai/v1/probe/ws/echo'), bearer());
    const big = Buffer.alloc(8 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4093) big[i] = i % 251;
    ws.send(big);
    const back = await nextMessage(ws);
    expect(back.data.length).toBe(big.length);
    expect(Buffer.compare(back.data, big)).toBe(0);
    ws.close();
  });

  it('closes 1009 on a message over 32 MiB, and the server goes on serving', async () => {
    const ws = await open(url('/openai/v1/probe/ws/echo'), bearer());
    ws.send(Buffer.alloc(32 * 1024 * 1024 + 1));
    const { code } = await closed(ws);
    expect(code).toBe(1009);
    const again = await open(url('/openai/v1/probe/ws/echo'), bearer());
    again.send('still here');
    expect(await nextText(again)).toBe('still here');
    again.close();
  });

  it('closes 1011 when the handler throws, logs it, and the server goes on serving', async () => {
    const ws = await open(url('/openai/v1/probe/ws/throw'), bearer());
    ws.send('boom');
    expect((await closed(ws)).code).toBe(1011);
    expect(t.logs.some((l) => l.includes('WebSocket handler threw') && l.includes('probe handler bug'))).toBe(true);
    const again = await open(url('/openai/v1/probe/ws/echo'), bearer());
    again.send('after');
    expect(await nextText(again)).toBe('after');
    again.close();
  });

  it('logs the upgrade as a request with status 101 and counts sessions and frames in /metrics', async () => {
    const ws = await open(url('/openai/v1/probe/ws/echo'), bearer());
    ws.send('one');
    await nextText(ws);
    const during = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(during).toMatch(/kuma_websocket_sessions_active\{route="\/openai\/v1\/probe\/ws\/echo"\} 1/);
    expect(during).toMatch(/kuma_websocket_frames_total\{route="\/openai\/v1\/probe\/ws\/echo",direction="in"\} [1-9]/);
    expect(during).toMatch(/kuma_websocket_frames_total\{route="\/openai\/v1\/probe\/ws\/echo",direction="out"\} [1-9]/);
    expect(during).toMatch(/kuma_http_requests_total\{method="GET",route="\/openai\/v1\/probe\/ws\/echo",status="101"\} [1-9]/);
    ws.close();
    await closed(ws);
    const access = t.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request' && l.route === '/openai/v1/probe/ws/echo');
    expect(access.some((l) => l.status === 101)).toBe(true);
  });

  it('answers a close with an invalid code (999) with an empty close frame (1005), as README "Security" says uWS does — not 1002', async () => {
    // A tripwire: should a uWS upgrade answer 1002 (RFC 6455 §7.4), README "Security" is to be updated.
    const upgrade = await rawUpgrade(Number(new URL(t.baseUrl).port), '/openai/v1/probe/ws/echo', { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(upgrade.status).toBe(101);
    const socket = upgrade.socket;
    const answer: Buffer[] = [];
    socket.on('data', (d: Buffer) => answer.push(d));
    const gone = new Promise((resolve) => socket.once('close', resolve));
    socket.resume();
    socket.write(maskedFrame(OPCODE.close, Buffer.from([0x03, 0xe7]))); // 999
    await gone;
    expect(Buffer.concat(answer)).toEqual(Buffer.from([0x88, 0x00])); // a close frame with no code
  });
});
