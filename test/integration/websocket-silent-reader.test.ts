/**
 * A client that stops reading while the server keeps producing: the transport closes it with 1008 "client is
 * not reading" once KUMA_WS_MAX_BUFFERED_BYTES are queued toward it, so the server's memory stays bounded
 * however much a producer that ignores backpressure sends. The server runs in its own process so that its
 * memory is its own.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { closed, nextText, open, wsUrl } from '../helpers/websocket-client.js';
import { floodPings, rawUpgrade } from '../helpers/hostile-sockets.js';
import { FrameReader } from '../../load-tests/realtime/websocket-frames.js';

const MAX_BUFFERED = 1024 * 1024;
const READERS = 4;
const MiB = 1024 * 1024;

let server: ServerProcess;
beforeAll(async () => {
  server = await startServerProcess({ KUMA_WS_MAX_BUFFERED_BYTES: String(MAX_BUFFERED) }, 'test/fixtures/serve-with-websocket-probes.ts');
});
afterAll(() => {
  server?.child.kill('SIGKILL');
});

function rssBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

describe('a client that does not read', () => {
  it(`is closed 1008 "client is not reading", and ${READERS} of them grow the server's memory by less than ${READERS} × (2 × the cut-off + 4 MiB) + 64 MiB`, async () => {
    const url = wsUrl(server.baseUrl, '/openai/v1/probe/ws/flood');
    const headers = { authorization: `Bearer ${server.apiKey}` };
    // Warm up the route (and what its first use allocates) before the baseline.
    const warm = await open(url, { headers });
    warm.send('stats');
    await nextText(warm);
    warm.close();
    await closed(warm);

    const baseline = rssBytes(server.pid);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(server.pid))), 10);
    try {
      const readers = await Promise.all(Array.from({ length: READERS }, () => open(url, { headers })));
      const closes = readers.map((ws) => {
        // Stop reading from the socket: the server's sends pile up in the kernel, then in uWS.
        (ws as any)._socket.pause();
        const done = closed(ws);
        ws.send('blast');
        return done;
      });
      // Give the floods time to reach the cut-off, then read again to see the close frame behind the data.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      for (const ws of readers) (ws as any)._socket.resume();
      const results = await Promise.all(closes);
      for (const result of results) expect(result).toEqual({ code: 1008, reason: 'client is not reading' });
    } finally {
      clearInterval(sampler);
    }
    // Measured: ≈ 70 MiB here for 4 readers at 1 MiB (≈ 90 for 8; ≈ 115 for 4 at 8 MiB): a fixed part (allocator
    // arenas after 40 MB went out at full speed) plus ≈ 1.5 × the cut-off per reader. Without the cut-off each
    // socket would grow to uWS's maxBackpressure (the cut-off + 64 MiB) before anything stopped it.
    expect(peak - baseline).toBeLessThan(READERS * (2 * MAX_BUFFERED + 4 * MiB) + 64 * MiB);
  });

  it('is not cut off while its producer waits for drained(): a well-behaved flood only pauses', async () => {
    const ws = await open(wsUrl(server.baseUrl, '/openai/v1/probe/ws/flood'), { headers: { authorization: `Bearer ${server.apiKey}` } });
    (ws as any)._socket.pause();
    ws.send('go');
    await new Promise((resolve) => setTimeout(resolve, 500));
    (ws as any)._socket.resume();
    // Read what was sent, then ask: the flood is still running, and it met backpressure at least once.
    let stats: { sent: number; backpressured: number } | null = null;
    ws.on('message', (data, isBinary) => {
      if (!isBinary) stats = JSON.parse(data.toString());
    });
    ws.send('stats');
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (stats) {
          clearInterval(check);
          resolve();
        }
      }, 10);
    });
    expect(ws.readyState).toBe(ws.OPEN);
    expect(stats!.backpressured).toBeGreaterThan(0);
    ws.close(1000);
    expect((await closed(ws)).code).toBe(1000);
  });

  it('is closed the same way when what piles up is pongs: a client that sends pings and never reads (P12 item 1)', async () => {
    const upgrade = await rawUpgrade(server.port, '/openai/v1/probe/ws/echo', { headers: { authorization: `Bearer ${server.apiKey}` } });
    expect(upgrade.status).toBe(101);
    const socket = upgrade.socket;
    // uWS answers each ping with a pong whether or not the client reads; before, it queued them up to its
    // maxBackpressure (the cut-off + 64 MiB), and the socket stayed open. (uWS reads on after closing it.)
    await floodPings(socket, 64 * MiB);
    let close: { code: number; reason: string } | null = null;
    let before = 0; // bytes of pongs read before the close frame
    const reader = new FrameReader({ message() {}, ping() {}, close: (code, reason) => (close ??= { code, reason }) });
    socket.on('data', (chunk: Buffer) => {
      if (!close) before += chunk.length;
      reader.push(chunk);
    });
    socket.on('error', () => {});
    const gone = new Promise((resolve) => socket.once('close', resolve));
    socket.resume();
    await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 15_000))]);
    expect(close).toEqual({ code: 1008, reason: 'client is not reading' });
    // The cut-off, plus what the kernel's socket buffers held on both sides (a few MiB on loopback).
    expect(before).toBeLessThan(MAX_BUFFERED + 16 * MiB);
  }, 60_000);
});
