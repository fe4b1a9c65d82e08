/**
 * load-tests/fairness (issue 16, Done means 1): account A floods the speech model with long requests from
 * many concurrent clients while account B sends short requests one after another. B's latency (request
 * sent → whole body read) is measured unloaded, then under A's flood; the bound is
 *   B's loaded p99 ≤ 2 × B's unloaded p99 + one job time,
 * where one job time is A's request served alone (p50), the most one of A's jobs can hold a replica.
 * The run fails (exit 1) when the bound is missed. Server: its own process, demo models, default replicas.
 *
 * Run: `npm run bench:fairness [-- --flood-clients 32 --requests 40 --no-write]`.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { percentile, recordSection } from '../results.js';
import { startModelServer } from '../model-server.js';
import { spawnWorker } from '../../src/threads/spawn-worker.js';

const { values } = parseArgs({
  options: {
    'no-write': { type: 'boolean', default: false },
    'flood-clients': { type: 'string', default: '32' },
    requests: { type: 'string', default: '40' },
    /** A's clients drain responses with a raw socket reader instead of fetch (less load-generator CPU). */
    'raw-flood': { type: 'boolean', default: false },
  },
});
const FLOOD_CLIENTS = Number(values['flood-clients']);
const REQUESTS = Number(values.requests);
const A_TEXT = 'n bɛ taa sugu la sini, an bɛ malo ni ji san ka na n fa ni n ba ye. '.repeat(9).trim(); // ≈ 600 characters
const B_TEXT = 'i ni ce, a ka kɛnɛ wa?';

const server = await startModelServer([{ id: 'jifili-1', engine: 'vits-hf', dir: path.resolve('models/demo/vits-hf'), maxQueue: 256 }]);
const url = `http://127.0.0.1:${server.port}/openai/v1/audio/speech`;

/**
 * B's latency parts: engine-first and first-bytes (Server-Timing: from asking for the first phrase job to
 * its PCM, and to the first encoded bytes) and the client's time to the first body byte.
 */
interface Parts {
  engineFirst: number[];
  firstBytes: number[];
  ttfb: number[];
}
const parts: { unloaded: Parts; loaded: Parts; current: Parts | null } = {
  unloaded: { engineFirst: [], firstBytes: [], ttfb: [] },
  loaded: { engineFirst: [], firstBytes: [], ttfb: [] },
  current: null,
};

async function speak(key: string, input: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'jifili-1', input, response_format: 'pcm' }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status} ${await res.text()}`);
  const reader = res.body!.getReader();
  let first = true;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    if (first && key === server.otherApiKey) parts.current?.ttfb.push(performance.now() - t0);
    first = false;
  }
  if (key === server.otherApiKey && parts.current) {
    const timing = res.headers.get('server-timing') ?? '';
    parts.current.engineFirst.push(Number(/engine-first;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN));
    parts.current.firstBytes.push(Number(/first-bytes;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN));
  }
  return performance.now() - t0;
}

async function sequential(key: string, input: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await speak(key, input));
  return out;
}

try {
  await sequential(server.apiKey, A_TEXT, 3); // warm-up
  await sequential(server.otherApiKey, B_TEXT, 3);
  const aAlone = await sequential(server.apiKey, A_TEXT, 10);
  parts.current = parts.unloaded;
  const bUnloaded = await sequential(server.otherApiKey, B_TEXT, REQUESTS);
  parts.current = null;

  // A's clients run on their own event loop (flood-worker.ts), so B's measured latency is the server's.
  const flood = spawnWorker(new URL(`./flood-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url), {
    workerData: { url, apiKey: server.apiKey, input: A_TEXT, clients: FLOOD_CLIENTS, raw: values['raw-flood'] },
  });
  const floodDone = new Promise<{ served: number; error?: string }>((resolve, reject) => {
    flood.once('message', resolve);
    flood.once('error', reject);
  });
  await new Promise((r) => setTimeout(r, 1000)); // A's backlog builds up
  parts.current = parts.loaded;
  const bLoaded = await sequential(server.otherApiKey, B_TEXT, REQUESTS);
  parts.current = null;
  flood.postMessage('stop');
  const { served: aServed, error } = await floodDone;
  await flood.terminate();
  if (error) throw new Error(error);

  const oneJob = percentile(aAlone, 50);
  const bound = 2 * percentile(bUnloaded, 99) + oneJob;
  const met = percentile(bLoaded, 99) <= bound;
  const row = (name: string, v: number[]) => `| ${name} | ${v.length} | ${percentile(v, 50).toFixed(1)} | ${percentile(v, 99).toFixed(1)} |`;
  recordSection(
    'fairness',
    [
      `Account A: ${FLOOD_CLIENTS} concurrent clients, each sending ${[...A_TEXT].length}-character speech requests (pcm) back to back and reading them with ${values['raw-flood'] ? 'a lean socket reader (`--raw-flood`)' : 'fetch'} (${aServed} served during B's loaded run). Account B: ${REQUESTS} requests of ${[...B_TEXT].length} characters, one after another. Latency: request sent → whole body read.`,
      `Bound: B's loaded p99 ≤ 2 × B's unloaded p99 + one job time (A's request alone, p50) = ${bound.toFixed(1)} ms: ${met ? 'met' : 'MISSED'}.`,
      "engine first PCM / first encoded bytes: the server's time from asking for B's first phrase job (queue included) to its PCM and to its first encoded bytes (Server-Timing `engine-first`, `first-bytes`); first body byte: the client's time from sending to the first byte of the body. The rest of B's latency is the rest of its phrases and body, HTTP, auth and the event loop, which A's streams share.",
      "Server in its own process (demo models, replicas by cores, jifili-1 maxQueue 256); B's client in this process, A's clients in a worker thread of it (their own event loop: their reading of megabytes of PCM must not delay B's client), on the same machine.",
    ],
    [
      '| requests | n | p50 ms | p99 ms |',
      '|---|---:|---:|---:|',
      row('A alone (one job time)', aAlone),
      row('B unloaded', bUnloaded),
      row('B while A floods', bLoaded),
      row('B unloaded: engine first PCM (server)', parts.unloaded.engineFirst),
      row('B while A floods: engine first PCM (server)', parts.loaded.engineFirst),
      row('B unloaded: first encoded bytes (server)', parts.unloaded.firstBytes),
      row('B while A floods: first encoded bytes (server)', parts.loaded.firstBytes),
      row('B unloaded: first body byte (client)', parts.unloaded.ttfb),
      row('B while A floods: first body byte (client)', parts.loaded.ttfb),
    ],
    !values['no-write'],
  );
  if (!met) process.exitCode = 1;
} finally {
  await server.stop();
}
