/**
 * load-tests/hostile/memory-after-peaks: what the server's memory does after a peak of sockets (issue P12
 * point 10). Kuma with the demo models (models/kuma-models.json), its own process, goes through:
 *   1. `--cycles` times: `--sessions` idle realtime sessions (transcription intent, `ws` clients) opened, then
 *      all closed;
 *   2. `--cycles` times: `--readers` speech-socket clients (jifili-1, pcm) that send a long text, read the first
 *      audio message and then stop reading, held until the server's audio for them has piled up, then gone.
 * At each step: the server's resident memory (VmRSS), V8's heap (total) and the memory outside it that V8 knows
 * of (external: ArrayBuffers) from its /metrics, and — for the peaks — the growth per socket over the baseline.
 * "after" is read `--settle-s` seconds after the last socket closed.
 * The server runs with glibc's malloc settings as `npm start` sets them (MALLOC_ARENA_MAX=2, mmap and trim
 * thresholds of 128 KiB), or those of the shell when set; `--glibc-defaults` runs it with glibc's own.
 * Run: `npm run bench:memory-peaks [-- --sessions 5000 --readers 300 --cycles 2 --no-write]`; `--server-dir DIR` serves
 * another checkout (a baseline).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { startModelServer, type ModelServer } from '../model-server.js';
import { recordSection } from '../results.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '5000' },
    readers: { type: 'string', default: '300' },
    cycles: { type: 'string', default: '2' },
    'settle-s': { type: 'string', default: '15' },
    label: { type: 'string', default: '' },
    /** Run the server with glibc's own malloc settings instead of those `npm start` sets. */
    'glibc-defaults': { type: 'boolean', default: false },
    /** Another checkout of Kuma to serve from (a baseline: its node_modules and models/demo linked in). */
    'server-dir': { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
const SESSIONS = Number(values.sessions);
const READERS = Number(values.readers);
const CYCLES = Number(values.cycles);
const SETTLE_MS = Number(values['settle-s']) * 1000;
const MiB = 1024 * 1024;
const TEXT = 'n bɛ taa sugu la sini, an bɛ malo san. '.repeat(25).trim(); // 974 characters (jifili-1 takes 1000)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function demoModels(): Array<Record<string, unknown>> {
  const manifest = JSON.parse(fs.readFileSync('models/kuma-models.json', 'utf8')) as { models: Array<Record<string, unknown>> };
  return manifest.models.map((m) => ({ ...m, dir: path.resolve('models', String(m.dir)) }));
}

interface Memory {
  rss: number;
  heap: number;
  external: number;
}

async function memory(server: ModelServer): Promise<Memory> {
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${server.pid}/status`, 'utf8'))![1]) * 1024;
  const metrics = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(metrics)?.[1] ?? NaN);
  return { rss, heap: gauge('kuma_nodejs_heap_size_total_bytes'), external: gauge('kuma_nodejs_external_memory_bytes') };
}

const mb = (bytes: number) => (bytes / MiB).toFixed(0);
const row = (step: string, m: Memory, note = '') => `| ${step} | ${mb(m.rss)} | ${mb(m.heap)} | ${mb(m.external)} | ${note} |`;

/** Opens one idle realtime session; resolves once session.created came. */
function openSession(server: ModelServer): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/openai/v1/realtime?intent=transcription`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    ws.once('message', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`realtime upgrade refused: ${res.statusCode}`)));
  });
}

const closedAll = (sockets: WebSocket[]) =>
  Promise.all(sockets.map((ws) => (ws.readyState === WebSocket.CLOSED ? undefined : new Promise((r) => ws.once('close', r)))));

/**
 * A speech-socket client that stops reading once its first audio arrived; resolves with it, or null when the
 * server refused it (the model at capacity: an error message, then close).
 */
function openSlowReader(server: ModelServer): Promise<WebSocket | null> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/openai/v1/audio/speech/stream?model=jifili-1&output_format=pcm_24000`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    ws.once('open', () => {
      ws.send(JSON.stringify({ text: TEXT }));
      ws.send(JSON.stringify({ flush: true }));
    });
    ws.on('message', (data) => {
      if (!String(data).includes('"audio"')) return;
      ws.removeAllListeners('message');
      (ws as unknown as { _socket: { pause(): void } })._socket.pause();
      resolve(ws);
    });
    ws.once('close', () => resolve(null));
    ws.once('error', () => resolve(null));
  });
}

// The sessions all come from one key: no per-key cap (the server reads KUMA_REALTIME_* from its environment).
process.env.KUMA_REALTIME_MAX_SESSIONS_PER_KEY = '0';
// The server inherits this process's environment: glibc's settings as `npm start` sets them (package.json),
// unless the shell set others or --glibc-defaults asks for none.
const NPM_START_MALLOC = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_TRIM_THRESHOLD_: '131072' };
if (values['glibc-defaults']) for (const name of Object.keys(NPM_START_MALLOC)) delete process.env[name];
else for (const [name, value] of Object.entries(NPM_START_MALLOC)) process.env[name] ??= value;
const serverDir = values['server-dir'] ? path.resolve(values['server-dir']) : undefined;
const server = await startModelServer(demoModels(), serverDir);
const rows = ['| step | RSS MB | V8 heap MB | external MB | note |', '|---|---:|---:|---:|---|'];
const show = (line: string) => (rows.push(line), process.stdout.write(`${line}\n`));
try {
  // Warm: one session and one speech reader, so the baseline holds what any first use loads.
  const warm = await openSession(server);
  warm.close();
  const warmReader = await openSlowReader(server);
  warmReader?.terminate();
  await sleep(2000);
  const baseline = await memory(server);
  show(row('baseline (after one session and one speech socket)', baseline));

  for (let cycle = 1; cycle <= CYCLES; cycle++) {
    const before = await memory(server);
    const sessions: WebSocket[] = [];
    for (let i = 0; i < SESSIONS; i += 250)
      sessions.push(...(await Promise.all(Array.from({ length: Math.min(250, SESSIONS - i) }, () => openSession(server)))));
    const peak = await memory(server);
    show(
      row(
        `${SESSIONS} realtime sessions open (cycle ${cycle})`,
        peak,
        `+${((peak.rss - before.rss) / SESSIONS / 1024).toFixed(0)} KiB RSS per session over the step before`,
      ),
    );
    const closing = closedAll(sessions);
    for (const ws of sessions) ws.close(1000);
    await closing;
    await sleep(SETTLE_MS);
    show(row(`all closed, +${SETTLE_MS / 1000} s (cycle ${cycle})`, await memory(server)));
  }

  for (let cycle = 1; cycle <= CYCLES; cycle++) {
    const before = await memory(server);
    const readers: WebSocket[] = [];
    let refused = 0;
    while (readers.length < READERS) {
      const batch = await Promise.all(Array.from({ length: Math.min(25, READERS - readers.length) }, () => openSlowReader(server)));
      for (const ws of batch) if (ws) readers.push(ws);
      const misses = batch.filter((ws) => ws === null).length;
      refused += misses;
      if (misses) await sleep(200); // the model's queue is full: retry as a client would
    }
    await sleep(5000); // what they are sent piles up on the server until its cut-off
    const peak = await memory(server);
    show(
      row(
        `${READERS} speech sockets not reading (cycle ${cycle})`,
        peak,
        `+${((peak.rss - before.rss) / READERS / MiB).toFixed(2)} MiB RSS per reader over the step before; ${refused} opens refused (model at capacity) and retried`,
      ),
    );
    for (const ws of readers) ws.terminate();
    await sleep(SETTLE_MS);
    show(row(`readers gone, +${SETTLE_MS / 1000} s (cycle ${cycle})`, await memory(server)));
  }
} finally {
  await server.stop();
}
const mallocEnv = Object.entries(process.env)
  .filter(([k]) => k.startsWith('MALLOC_'))
  .map(([k, v]) => `${k}=${v}`);
recordSection(
  `memory after peaks${values.label ? ` — ${values.label}` : ''}`,
  [
    `Server: ${serverDir ? `the checkout in ${serverDir}` : 'this checkout'}, its own process, the demo models of models/kuma-models.json, KUMA_REALTIME_MAX_SESSIONS_PER_KEY=0 (all sessions from one key); clients (\`ws\`) in this process.`,
    `glibc environment of the server: ${mallocEnv.length ? mallocEnv.join(' ') : 'none set (glibc defaults)'}; NODE_OPTIONS: ${process.env.NODE_OPTIONS ?? 'none'}.`,
    'RSS from /proc/<pid>/status; V8 heap (total) and external from /metrics (prom-client). Speech readers: 974 characters each, jifili-1, pcm_24000; they read one audio message, then stop reading.',
  ],
  rows,
  !values['no-write'],
);
