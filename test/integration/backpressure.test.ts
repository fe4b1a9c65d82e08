/**
 * An SSE client that stops reading must not make the server buffer without bound: the producer is paused
 * by backpressure (bytes produced stop growing, under a fixed cap), and after the stall timeout the stream
 * is ended and the producer's cleanup runs.
 */
import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import type { RouteDef } from '../../src/api/types.js';

const EVENT_PAYLOAD = JSON.stringify({ type: 'transcript.text.delta', delta: 'x'.repeat(4000) });
let produced = 0;
let producerFinished = false;

const firehose: RouteDef = {
  method: 'GET',
  path: '/test/firehose',
  surface: 'compat',
  auth: false,
  handler: async () => ({
    kind: 'sse',
    events: (async function* () {
      try {
        while (true) {
          produced += EVENT_PAYLOAD.length;
          yield { data: EVENT_PAYLOAD };
        }
      } finally {
        producerFinished = true;
      }
    })(),
  }),
};

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ config: { streamStallTimeoutMs: 2500 }, extraRoutes: () => [firehose] });
});
afterAll(() => t.close());

it('a client that stops reading an SSE stream does not make the server buffer without bound', async () => {
  const CAP = 32 * 1024 * 1024; // kernel socket buffers on loopback (both ends) plus one event
  const socket = net.connect(t.server.port, '127.0.0.1');
  let read = 0;
  let closed = false;
  let reading = true;
  socket.on('close', () => (closed = true));
  socket.on('data', (chunk) => {
    read += chunk.length;
    if (reading && read > 64 * 1024) socket.pause(); // read a little, then stop reading entirely
  });
  socket.write('GET /compat/v1/test/firehose HTTP/1.1\r\nHost: x\r\n\r\n');

  await sleep(1000);
  const first = produced;
  await sleep(800);
  const second = produced;
  expect(second - read).toBeLessThan(CAP);
  // Paused: nothing (or at most one more event) was produced while the client read nothing.
  expect(second - first).toBeLessThanOrEqual(EVENT_PAYLOAD.length);
  expect(producerFinished).toBe(false);

  // After the stall timeout the server gives up on the client: the stream ends and the producer is stopped.
  await waitFor(() => producerFinished, 5000);
  expect(produced - second).toBeLessThanOrEqual(EVENT_PAYLOAD.length);
  reading = false;
  socket.resume();
  await waitFor(() => closed, 5000);
  // The server still serves others.
  expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(cond: () => boolean, ms: number) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(20);
  }
}
