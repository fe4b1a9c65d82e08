/**
 * TLS (KUMA_TLS_CERT / KUMA_TLS_KEY): https:// and wss:// on one port, reached by `ws` and by the openai
 * SDK's realtime client with the test certificate as CA; and shutdown: sessions are told, those that end
 * themselves do, the rest are closed 1001.
 */
import fs from 'node:fs';
import https from 'node:https';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { closed, nextText, open } from '../helpers/websocket-client.js';
import { websocketProbeRoutes } from '../fixtures/websocket-probe-routes.js';

const cert = 'test/fixtures/tls/localhost-cert.pem';
const ca = fs.readFileSync(cert);

describe('TLS', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ extraRoutes: () => websocketProbeRoutes(), config: { tlsCert: cert, tlsKey: 'test/fixtures/tls/localhost-key.pem' } });
  });
  afterAll(() => t.close());

  it('serves https:// and wss:// on the same port', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      https
        .get(`https://127.0.0.1:${t.server.port}/healthz`, { ca }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
        .on('error', reject);
    });
    expect(status).toBe(200);
    const ws = await open(`wss://127.0.0.1:${t.server.port}/openai/v1/probe/ws/echo`, { ca, headers: { authorization: `Bearer ${t.apiKey}` } });
    ws.send('over tls');
    expect(await nextText(ws)).toBe('over tls');
    ws.close(1000);
  });

  it("the openai SDK's OpenAIRealtimeWS connects over wss with the CA in its options", async () => {
    const client = new OpenAI({ apiKey: t.apiKey, baseURL: `https://127.0.0.1:${t.server.port}/openai/v1/probe` });
    // The SDK dials <baseURL>/realtime?model=…, with the scheme forced to wss and the key as a Bearer header.
    const rt = new OpenAIRealtimeWS({ model: 'sunjata-1', options: { ca } }, client);
    await new Promise<void>((resolve, reject) => {
      rt.socket.once('open', () => resolve());
      rt.socket.once('error', reject);
    });
    const echoed = new Promise<any>((resolve) => rt.on('event', resolve));
    rt.send({ type: 'input_audio_buffer.clear' });
    expect(await echoed).toEqual({ type: 'input_audio_buffer.clear' });
    rt.close();
  });

  it('refuses to start with a certificate file that cannot be read, naming it', async () => {
    await expect(startTestServer({ config: { tlsCert: 'test/fixtures/tls/missing.pem', tlsKey: 'test/fixtures/tls/localhost-key.pem' } })).rejects.toThrow(
      /missing\.pem/,
    );
  });
});

describe('shutdown', () => {
  it('tells open sessions, lets those that end themselves close 1000, and closes the rest 1001 after the grace period', async () => {
    const t = await startTestServer({ extraRoutes: () => websocketProbeRoutes(), config: { shutdownGraceMs: 300 } });
    const headers = { authorization: `Bearer ${t.apiKey}` };
    const url = `ws://127.0.0.1:${t.server.port}/openai/v1/probe/ws/shutdown`;
    const polite = await open(url, { headers });
    const stubborn = await open(url, { headers });
    stubborn.send('stay');
    expect(await nextText(stubborn)).toBe('ok');
    const told: string[] = [];
    stubborn.on('message', (data) => told.push(data.toString()));
    const [politeClose, stubbornClose] = [closed(polite), closed(stubborn)];
    await t.close();
    expect(await politeClose).toEqual({ code: 1000, reason: 'done' });
    expect(await stubbornClose).toEqual({ code: 1001, reason: 'server shutting down' });
    expect(told).toEqual(['shutting down']);
  });
});
