/**
 * DuplexPeer.flushed() over a real socket: what a charge for delivered output waits for (realtime items,
 * speech-socket phrases). It answers true only once everything sent has been written to the network — not
 * while a client that stops reading leaves frames queued in the server — and false when the client leaves
 * with frames still queued (they never left the process, so nothing for them may be charged).
 */
import type WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flushOutcomes, flushProbeRoute } from '../fixtures/flush-probe-route.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { closed, open, wsUrl } from '../helpers/websocket-client.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ extraRoutes: () => [flushProbeRoute()] });
});
afterAll(() => t.close());

/** A client that does not read: its socket is paused, so the kernel's buffers fill and the server holds the rest. */
async function stalledClient(): Promise<{ ws: WebSocket; requestId: string; received: () => number }> {
  const ws = await open(wsUrl(t.baseUrl, '/openai/v1/probe/ws/flush'), { headers: { authorization: `Bearer ${t.apiKey}` } });
  let bytes = 0;
  ws.on('message', (data: Buffer) => (bytes += data.length));
  const before = new Set(flushOutcomes.keys());
  const socket = (ws as unknown as { _socket: { pause(): void } })._socket;
  socket.pause();
  ws.send('fill');
  for (let i = 0; i < 500; i++) {
    const id = [...flushOutcomes.keys()].find((k) => !before.has(k));
    if (id) return { ws, requestId: id, received: () => bytes };
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the probe never filled the socket');
}

const outcome = async (id: string, expected: boolean) => {
  for (let i = 0; i < 500 && flushOutcomes.get(id) === 'pending'; i++) await new Promise((r) => setTimeout(r, 10));
  expect(flushOutcomes.get(id)).toBe(expected);
};

describe('DuplexPeer.flushed()', () => {
  it('stays pending while a client does not read, and answers true once it has read everything', async () => {
    const { ws, requestId, received } = await stalledClient();
    await new Promise((r) => setTimeout(r, 200));
    expect(flushOutcomes.get(requestId)).toBe('pending');
    (ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await outcome(requestId, true);
    // Everything flushed has left the server: the client gets all of it, the last 1-byte frame included.
    for (let i = 0; i < 200 && received() % (64 * 1024) !== 1; i++) await new Promise((r) => setTimeout(r, 10));
    expect(received() % (64 * 1024)).toBe(1);
    ws.close();
    await closed(ws);
  });

  it('answers false when the client leaves with frames still queued in the server', async () => {
    const { ws, requestId } = await stalledClient();
    ws.terminate();
    await outcome(requestId, false);
  });
});
