/**
 * An upload whose socket Kuma paused (backpressure: the handler reads more slowly than the client sends)
 * still gets its answer when the work after the body takes longer than uWebSockets.js's HTTP idle timeout
 * (10 s, checked every 4 s: it fires 8–12 s after it is armed). uWS's resume() arms that timer, meant for a
 * client that stops sending; resumed after the whole body is in, nothing reset it any more, and the
 * request was closed without a status while the server was still working on it (issue P12 point 2: under
 * a busy CPU, 15 of 60 uploads of 2–20 MB lost this way, load-tests/hostile/busy-uploads.ts).
 *
 * The probe route waits before it reads, so the body piles up past the body queue's 1 MiB high-water mark
 * and the socket is paused with the last bytes; it then reads everything and answers 13 s later. Two ways
 * a body's end meets a pause: a Content-Length body whose last read takes the queue over the mark, and a
 * chunked body whose terminating chunk comes in the same read as the chunk that pauses it.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteDef } from '../../src/api/types.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

const READ_AFTER_MS = 1_000;
/** Past uWS's idle timeout from any moment the socket can have been resumed at. */
const ANSWER_AFTER_MS = 13_000;
const HIGH_WATER = 1024 * 1024;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const slowReader: RouteDef = {
  method: 'POST',
  path: '/test/slow-reader',
  surface: 'compat',
  auth: false,
  handler: async (req) => {
    await sleep(READ_AFTER_MS);
    let bytes = 0;
    for await (const chunk of req.body.chunks()) bytes += chunk.byteLength;
    await sleep(ANSWER_AFTER_MS);
    return { kind: 'json', body: { bytes } };
  },
};

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ extraRoutes: () => [slowReader] });
});
afterAll(() => t.close());

/** Sends `parts` on a fresh connection (each part one write, `gapMs` apart) and reads the whole answer. */
async function exchange(parts: Buffer[], gapMs: number): Promise<{ head: string; body: string; closedWithoutAnswer: boolean }> {
  const socket = net.connect(t.server.port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const received: Buffer[] = [];
  socket.on('data', (chunk) => received.push(chunk));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {}); // a reset ends the exchange like a close; what was received says the rest
  for (const [i, part] of parts.entries()) {
    if (i > 0) await sleep(gapMs);
    socket.write(part);
  }
  await ended;
  const text = Buffer.concat(received).toString('latin1');
  const [head = '', body = ''] = text.split('\r\n\r\n');
  return { head, body, closedWithoutAnswer: text.length === 0 };
}

// The two cases wait side by side: each spends 14 s mostly asleep.
describe.concurrent('paused uploads', () => {
  it('answers a Content-Length upload paused with its last bytes, after more than the idle timeout', async () => {
    const size = HIGH_WATER + 64 * 1024; // over the mark only once the last byte is in
    const head = Buffer.from(`POST /compat/v1/test/slow-reader HTTP/1.1\r\nHost: x\r\nContent-Length: ${size}\r\nConnection: close\r\n\r\n`);
    const answer = await exchange([Buffer.concat([head, Buffer.alloc(size, 7)])], 0);
    expect(answer.closedWithoutAnswer).toBe(false);
    expect(answer.head).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(answer.body)).toEqual({ bytes: size });
  }, 30_000);

  it('answers a chunked upload whose terminating chunk came with the chunk that paused it', async () => {
    const chunk = (payload: Buffer) => Buffer.concat([Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from('\r\n')]);
    const head = Buffer.from(`POST /compat/v1/test/slow-reader HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`);
    // Just under the mark first (queued, not paused: the handler is not reading yet)…
    const first = Array.from({ length: 16 }, (_, i) => chunk(Buffer.alloc(i < 15 ? 64 * 1024 : 64 * 1024 - 1024, 1)));
    // …then, in one small write (one read on the server), the chunk that takes it over and the end of the body.
    const last = Buffer.concat([chunk(Buffer.alloc(2048, 2)), Buffer.from('0\r\n\r\n')]);
    const answer = await exchange([Buffer.concat([head, ...first]), last], 300);
    expect(answer.closedWithoutAnswer).toBe(false);
    expect(answer.head).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(answer.body)).toEqual({ bytes: HIGH_WATER - 1024 + 2048 });
  }, 30_000);
});
