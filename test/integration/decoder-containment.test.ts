/**
 * Decoder containment (issue 16, Done-means 4), against a real server process with the demo models: an
 * upload built to exhaust memory in the decoder (test/helpers/memory-bomb.ts: a 4 MB M4A that passes the
 * MP4 guards and decodes in one call to ≈ 1.3 GB) gets a clean 400 naming `file`, the server's own
 * memory does not follow the decoder's, the process lives, and the next uploads are served normally.
 *
 * Before the decoder pool ran children, this file was decoded in a worker thread of the server process:
 * the server's resident memory grew by ≈ 1.2 GB and the request went on to be transcribed (20 minutes
 * of audio), so both the 400 and the memory bound below fail there.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';
import { memoryBombM4a } from '../helpers/memory-bomb.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/** The server's own peak growth while its decoder child runs away: the upload, its copies, a decoder restart. */
const SERVER_GROWTH_BOUND_MB = 250;

let server: ServerProcess;
let bomb: Buffer;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-contain-'));

beforeAll(async () => {
  [server, bomb] = await Promise.all([
    startServerProcess({ KUMA_DB_PATH: path.join(dir, 'kuma.sqlite'), KUMA_TMP_DIR: dir, KUMA_RATE_LIMITS: 'off' }),
    memoryBombM4a(),
  ]);
}, 180_000);

afterAll(() => {
  server?.child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

const statusMb = (field: 'VmHWM' | 'VmRSS') =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${server.pid}/status`, 'utf8'))![1]) / 1024;

async function transcribe(file: Uint8Array, name: string): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('file', new Blob([file]), name);
  form.append('model', 'sunjata-1');
  const res = await fetch(`${server.baseUrl}/openai/v1/audio/transcriptions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}` },
    body: form,
  });
  return { status: res.status, body: await res.json() };
}

it("an upload that exhausts the decoder's memory gets a 400; the server lives, its memory stays bounded, and the next upload is served", async () => {
  expect(bomb.length).toBeLessThan(5_000_000);
  const phrase = spokenPhrases(['i ni ce'], 16000, 0.3);
  const wav = wavBytes(phrase.samples, 16000);
  expect((await transcribe(wav, 'warm.wav')).status).toBe(200); // a decoder child is running and warm

  fs.writeFileSync(`/proc/${server.pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
  const before = statusMb('VmRSS');
  const refused = await transcribe(bomb, 'long.m4a');
  const growth = statusMb('VmHWM') - before;

  expect(refused.status).toBe(400);
  expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value', param: 'file', message: expect.stringMatching(/memory/) });
  expect(JSON.stringify(refused.body)).not.toMatch(/at .*\.ts:\d+|FATAL|node:internal/); // no stack, no internals
  expect(growth).toBeLessThan(SERVER_GROWTH_BOUND_MB);
  expect(server.child.exitCode).toBeNull();
  expect(server.child.signalCode).toBeNull();

  // The next uploads are decoded by a fresh child and transcribed as before.
  for (let i = 0; i < 3; i++) {
    const next = await transcribe(wav, `next-${i}.wav`);
    expect(next.status).toBe(200);
    expect(next.body.text).toBe('i ni ce');
  }
}, 120_000);
