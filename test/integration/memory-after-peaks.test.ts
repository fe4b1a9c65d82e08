/**
 * Memory a peak of realtime sessions costs and gives back (issue P12 point 10), on a server process with the
 * demo models: idle sessions (opened, session.created, nothing sent) hold no audio buffer — each had 4 s of
 * samples preallocated, 256 KiB, 1.25 GB for 5,000 — and once most of them have closed the server runs one
 * garbage collection (observability/memory-reducer.ts), where before what they held waited for the next
 * allocation-driven one, which an idle server never ran. How much of the freed memory leaves the process is
 * measured in load-tests/hostile/memory-after-peaks.ts (RSS depends on the allocator's settings).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';

const SESSIONS = 400;
const KiB = 1024;
const MiB = 1024 * KiB;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-memory-peaks-'));
let server: ServerProcess;
beforeAll(async () => {
  server = await startServerProcess({ KUMA_DB_PATH: path.join(dir, 'kuma.sqlite'), KUMA_TMP_DIR: dir, KUMA_REALTIME_MAX_SESSIONS_PER_KEY: '0' });
}, 120_000);
afterAll(() => {
  server?.child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

const metrics = async () => (await fetch(`${server.baseUrl}/metrics`)).text();
const externalBytes = async () => Number(/^kuma_nodejs_external_memory_bytes (\S+)/m.exec(await metrics())![1]);
/** Full (mark-compact) collections the server has run, from prom-client's GC histogram. */
const majorCollections = async () => Number(/^kuma_nodejs_gc_duration_seconds_count\{kind="major"\} (\S+)/m.exec(await metrics())?.[1] ?? 0);

function openSession(): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/openai/v1/realtime?intent=transcription`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    ws.once('message', () => resolve(ws)); // session.created
    ws.once('error', reject);
  });
}

it(`${SESSIONS} idle realtime sessions hold under 64 KiB each outside V8's heap, and their closing is followed by one collection`, async () => {
  (await openSession()).close(); // what a first session loads is not per session
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = await externalBytes();
  const sessions: WebSocket[] = [];
  for (let i = 0; i < SESSIONS; i += 50) sessions.push(...(await Promise.all(Array.from({ length: 50 }, openSession))));
  const open = await externalBytes();
  const perSession = (open - before) / SESSIONS;
  expect(perSession).toBeLessThan(64 * KiB);

  // The reducer samples the connections every second: the sessions stay open long enough to be its peak.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  // Read before the sessions close: the collection may come as soon as a second after they have.
  const majorBefore = await majorCollections();
  const closed = sessions.map((ws) => new Promise((resolve) => ws.once('close', resolve)));
  for (const ws of sessions) ws.close(1000);
  await Promise.all(closed);
  // Nothing else happens on the server now: the memory reducer collects what the sessions held.
  await expect.poll(majorCollections, { timeout: 15_000, interval: 500 }).toBeGreaterThan(majorBefore);
  console.log(
    `memory-after-peaks: ${(perSession / KiB).toFixed(1)} KiB outside the heap per idle session (${((open - before) / MiB).toFixed(1)} MiB for ${SESSIONS}); external memory ${((await externalBytes()) / MiB).toFixed(1)} MiB after they closed (${(before / MiB).toFixed(1)} before)`,
  );
}, 120_000);
