/**
 * A key offered as a subprotocol without `realtime` (`Sec-WebSocket-Protocol: openai-insecure-api-key.<key>`)
 * authenticates the upgrade; RFC 6455 clients (`ws`, browsers) then abort unless the server answers one of the
 * offered protocols ("Server sent no subprotocol"). The server echoes that entry; with `realtime` offered it
 * answers `realtime`, as before. Checked on the realtime route and on the speech socket, through `ws`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startRealtimeServer } from '../../helpers/realtime.js';
import type { TestServer } from '../../helpers/test-server.js';
import { closed, connect, nextText, wsUrl } from '../../helpers/websocket-client.js';

let t: TestServer;
beforeAll(async () => {
  t = await startRealtimeServer();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const ROUTES = [
  ['realtime', '/openai/v1/realtime?intent=transcription'],
  ['realtime (compat prefix)', '/compat/v1/realtime?intent=transcription'],
  ['speech socket', '/openai/v1/audio/speech/stream?output_format=pcm_16000'],
  ['speech socket (ElevenLabs path)', '/compat/v1/text-to-speech/alloy/stream-input?output_format=pcm_16000'],
] as const;

it.each(ROUTES)('%s: the key subprotocol alone is echoed, and the session works', async (_name, path) => {
  const key = `openai-insecure-api-key.${t.apiKey}`;
  // Listening from the start: session.created can arrive in the packet that completes the upgrade.
  const ws = new WebSocket(wsUrl(t.baseUrl, path), [key]);
  const messages: string[] = [];
  ws.on('message', (data) => messages.push(data.toString()));
  const answered = new Promise<string | undefined>((resolve) => ws.once('upgrade', (res) => resolve(res.headers['sec-websocket-protocol'])));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  expect(ws.protocol).toBe(key);
  expect(await answered).toBe(key);
  if (path.includes('realtime')) {
    await expect.poll(() => messages.length).toBeGreaterThan(0);
    expect(JSON.parse(messages[0]!).type).toBe('session.created');
  } else {
    ws.send(JSON.stringify({ text: 'i ni ce ' }));
    ws.send(JSON.stringify({ text: '' }));
    const first = JSON.parse(await nextText(ws));
    expect(typeof first.audio).toBe('string');
  }
  ws.close();
  await closed(ws);
});

it.each(ROUTES)('%s: beside `realtime` the answer is `realtime`; beside an unknown protocol, the key entry', async (_name, path) => {
  const key = `openai-insecure-api-key.${t.apiKey}`;
  const browser = await connect(wsUrl(t.baseUrl, path), { protocols: ['realtime', key, 'openai-beta.realtime-v1'] });
  expect(browser.kind === 'open' && browser.ws.protocol).toBe('realtime');
  if (browser.kind === 'open') browser.ws.close();
  const agents = await connect(wsUrl(t.baseUrl, path), { protocols: [key, 'openai-agents-sdk.0.20.0'] });
  expect(agents.kind === 'open' && agents.ws.protocol).toBe(key);
  if (agents.kind === 'open') agents.ws.close();
});

it('a bad key offered alone is still refused before the upgrade (401), and an unknown protocol alone gets none', async () => {
  const bad = await connect(wsUrl(t.baseUrl, ROUTES[0][1]), { protocols: ['openai-insecure-api-key.00000000-0000-4000-8000-000000000000'] });
  expect(bad).toMatchObject({ kind: 'refused', status: 401 });
  // `ws` offers `foo`, the server answers none, and `ws` aborts as RFC 6455 says: the server speaks no `foo`.
  await expect(connect(wsUrl(t.baseUrl, ROUTES[0][1]), { protocols: ['foo'], headers: { authorization: `Bearer ${t.apiKey}` } })).rejects.toThrow(
    /no subprotocol/,
  );
});
