/**
 * Answers sent before an upload has been read reach real Node clients as their status, not as a connection
 * error (P6 item 4): the openai SDKs 4, 5, 6 and 7 (7 streams the body chunked, without Content-Length)
 * upload to a server that refuses the key (401), the balance (402) or the size (413), 20 times each, and
 * every attempt sees the status. A rejected upload is neither stored nor charged, and (item 2) the server
 * process survives a chunked upload over the limit.
 *
 * The server runs in its own process, as in production: in-process, client and server share one event loop
 * and the timing that turns an early close into EPIPE on the client (9 in 10 attempts before the fix) hides.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI4, { toFile as toFile4 } from 'openai4';
import OpenAI5, { toFile as toFile5 } from 'openai5';
import OpenAI6, { toFile as toFile6 } from 'openai';
import OpenAI7, { toFile as toFile7 } from 'openai7';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { generateApiKey, hashApiKey } from '../../src/auth/api-keys.js';
import { wavBytes } from '../helpers/audio.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';

type Sdk = { name: string; make(opts: { apiKey: string; baseURL: string; maxRetries: number }): any; toFile(bytes: Buffer, name: string): Promise<unknown> };
const SDKS: Sdk[] = [
  { name: 'openai 4', make: (o) => new OpenAI4(o), toFile: (b, n) => toFile4(b, n) },
  { name: 'openai 5', make: (o) => new OpenAI5(o), toFile: (b, n) => toFile5(b, n) },
  { name: 'openai 6', make: (o) => new OpenAI6(o), toFile: (b, n) => toFile6(b, n) },
  { name: 'openai 7', make: (o) => new OpenAI7(o), toFile: (b, n) => toFile7(b, n) },
];
const TRIES = 20;
const MAX_UPLOAD = 6_000_000;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-early-'));
const spool = path.join(dir, 'spool');
let server: ServerProcess;
let baseUrl: string;
let brokeKey: string;
// Uploads far larger than loopback socket buffers, so the answer is decided while most of the body is
// still to come (smaller ones fit in the kernel's buffers and never show the problem).
const tone = (seconds: number) =>
  wavBytes(
    new Float32Array(16000 * seconds).map((_, i) => Math.sin(i / 7) * 0.3),
    16000,
  );
const big = tone(360); // 11.5 MB: over the limit
const small = tone(90); // 2.9 MB and
const medium = tone(180); // 5.8 MB: under it (an upload a client may legitimately send)

beforeAll(async () => {
  fs.mkdirSync(spool);
  const dbPath = path.join(dir, 'kuma.sqlite');
  // No models are needed: every answer here is decided before any model would run.
  server = await startServerProcess({ KUMA_DB_PATH: dbPath, KUMA_TMP_DIR: spool, KUMA_MODELS_MANIFEST: '', KUMA_MAX_UPLOAD_BYTES: String(MAX_UPLOAD) });
  baseUrl = `http://127.0.0.1:${server.port}`;
  const store = await openSqliteStore(dbPath);
  const broke = await store.createAccount('broke', 0);
  brokeKey = generateApiKey();
  await store.createKey(broke.id, hashApiKey(brokeKey), 'broke');
  await store.close();
}, 60_000);

afterAll(() => {
  server?.child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

async function statusOf(sdk: Sdk, apiKey: string, bytes: Buffer): Promise<number | string> {
  const client = sdk.make({ apiKey, baseURL: `${baseUrl}/openai/v1`, maxRetries: 0 });
  try {
    await client.audio.transcriptions.create({ file: await sdk.toFile(bytes, 'speech.wav'), model: 'sunjata-1' });
    return 'succeeded';
  } catch (err) {
    const e = err as { status?: number; constructor: { name: string }; message: string };
    return e.status ?? `${e.constructor.name}: ${e.message}`;
  }
}

describe.each(SDKS)('$name upload refused early', (sdk) => {
  it(`sees 401 for a bad key, ${TRIES} times out of ${TRIES}`, async () => {
    const seen = [];
    for (let i = 0; i < TRIES; i++) seen.push(await statusOf(sdk, '00000000-0000-4000-8000-000000000000', i % 2 ? medium : small));
    expect(seen).toEqual(Array(TRIES).fill(401));
  });

  it(`sees 402 for an empty balance, ${TRIES} times out of ${TRIES}`, async () => {
    const seen = [];
    for (let i = 0; i < TRIES; i++) seen.push(await statusOf(sdk, brokeKey, i % 2 ? medium : small));
    expect(seen).toEqual(Array(TRIES).fill(402));
  });

  it(`sees 413 for an upload over the limit, ${TRIES} times out of ${TRIES}`, async () => {
    const seen = [];
    for (let i = 0; i < TRIES; i++) seen.push(await statusOf(sdk, server.apiKey, big));
    expect(seen).toEqual(Array(TRIES).fill(413));
  });
});

describe('a rejected upload', () => {
  it('leaves no spooled file behind, is not charged, and the process lives on', async () => {
    const balance = async () => {
      const store = await openSqliteStore(path.join(dir, 'kuma.sqlite'));
      try {
        return (await store.getAccount(server.accountId))!.balanceMicros;
      } finally {
        await store.close();
      }
    };
    const before = await balance();
    expect(await statusOf(SDKS[3]!, server.apiKey, big)).toBe(413);
    expect(fs.readdirSync(spool)).toEqual([]);
    expect(await balance()).toBe(before);
    expect(server.child.exitCode).toBeNull();
    expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
  });
});
