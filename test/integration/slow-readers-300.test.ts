/**
 * Issue 16, Done means 2: 300 clients that ask for speech and stop reading, on a server in its own process
 * with the demo models. While all 300 are stalled, other clients' speech requests keep succeeding (200,
 * whole bodies), and the server's resident memory grows by at most RSS_PER_READER per stalled reader:
 * each holds at most two phrases of samples (the one being encoded and one synthesized ahead,
 * phrase-synthesis.ts) and its encoder, never a model replica.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { openSlowReader, type SlowReader } from '../helpers/slow-reader.js';

const READERS = 300;
/** Bound on the server's RSS growth per stalled reader (two ≈ 38-character phrases of float32 samples are ≈ 0.7 MB). */
const RSS_PER_READER = 2 * 1024 * 1024;
const TEXT = 'n bɛ taa sugu la sini, an bɛ malo san. '.repeat(25).trim(); // 974 characters (jifili-1 takes 1000)

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-slow-300-'));
let server: ServerProcess;
beforeAll(async () => {
  // The readers must still be stalled, not cut, when the others are served.
  server = await startServerProcess({ KUMA_DB_PATH: path.join(dir, 'kuma.sqlite'), KUMA_TMP_DIR: dir, KUMA_STREAM_STALL_TIMEOUT_MS: '600000' });
}, 120_000);
afterAll(() => {
  server?.child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

const rssBytes = () => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${server.pid}/status`, 'utf8'))![1]) * 1024;
const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const body = (input: string, format = 'pcm') => JSON.stringify({ model: 'jifili-1', input, response_format: format });

async function speakWhole(key: string, input: string, format: string): Promise<number> {
  const res = await fetch(`${server.baseUrl}/openai/v1/audio/speech`, {
    method: 'POST',
    headers: headers(key),
    body: body(input, format),
    signal: AbortSignal.timeout(60_000),
  });
  expect(res.status).toBe(200);
  return (await res.arrayBuffer()).byteLength;
}

/** Opens a reader, retrying while the model's queue refuses new requests (503: 300 arrive at once). */
async function openReader(): Promise<SlowReader> {
  for (;;) {
    const reader = await openSlowReader(server.port, '/openai/v1/audio/speech', headers(server.apiKey), body(TEXT), 1);
    if (reader.status === 200) return reader;
    reader.destroy();
    expect(reader.status).toBe(503);
    await new Promise((r) => setTimeout(r, 100));
  }
}

it(`${READERS} stalled speech readers: other clients keep being served, and the server's memory stays bounded`, async () => {
  // Warm every format's encoder once, so the baseline includes what any request would load.
  for (const format of ['pcm', 'mp3', 'opus']) await speakWhole(server.otherApiKey, 'i ni ce', format);
  const before = rssBytes();

  const readers: SlowReader[] = [];
  for (let i = 0; i < READERS; i += 25) readers.push(...(await Promise.all(Array.from({ length: Math.min(25, READERS - i) }, openReader))));
  expect(readers).toHaveLength(READERS);

  // Every reader is stalled now (none reads); the other account's requests are served whole, in every format.
  const lengths = await Promise.all(
    ['pcm', 'mp3', 'opus', 'wav', 'pcm', 'mp3'].map((format) => speakWhole(server.otherApiKey, 'i ni ce. a ka kɛnɛ wa?', format)),
  );
  expect(lengths.every((n) => n > 0)).toBe(true);
  for (let i = 0; i < 10; i++) expect(await speakWhole(server.otherApiKey, TEXT.slice(0, 200), 'pcm')).toBeGreaterThan(0);

  const grown = rssBytes() - before;
  expect(grown).toBeLessThan(READERS * RSS_PER_READER);
  // The server is alive and answers once the readers leave.
  for (const r of readers) r.destroy();
  expect(await speakWhole(server.apiKey, 'i ni ce', 'pcm')).toBeGreaterThan(0);
  console.log(`slow-readers-300: RSS ${Math.round(before / 2 ** 20)} MB before, +${Math.round(grown / 2 ** 20)} MB with ${READERS} stalled readers`);
}, 240_000);
