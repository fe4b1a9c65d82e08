/**
 * SIGTERM while transcriptions are in flight (issue P12 point 8), against a real server process with the
 * demo models that leads its own process group, the signal sent to the whole group as a terminal's Ctrl-C
 * or a supervisor's group kill sends it: each transcription finishes within KUMA_SHUTDOWN_GRACE_MS, or ends
 * with 503 and Retry-After when the grace runs out. Never a 400 that blames the client's valid file, never a
 * connection closed with no status, nothing logged at error level.
 *
 * Before: the signal also reached the decoder child processes, which died under their uploads; the pool
 * answered "the audio decoder failed on this file" (400) and "decoder restarted" (503). And requests still
 * running when the grace ran out were cut with the sockets, with no answer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { runFfmpeg } from '../unit/codecs/helpers/ffmpeg.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-sigterm-'));
const silentFlac = (seconds: number) =>
  runFfmpeg(['-f', 'lavfi', '-i', 'anullsrc=r=44100:cl=mono', '-t', String(seconds), '-c:a', 'flac', '-f', 'flac', 'pipe:1']).then((b) => new Uint8Array(b));
/** Decoded and transcribed in seconds of CPU each (three minutes of CPU for three of 7,199 s: long-audio.test.ts). */
let shortFile: Uint8Array;
/** Far more work than a 1 s grace period leaves. */
let longFile: Uint8Array;
let warmUpFile: Uint8Array;

beforeAll(async () => {
  [shortFile, longFile, warmUpFile] = await Promise.all([silentFlac(240), silentFlac(2400), silentFlac(2)]);
}, 60_000);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Outcome {
  status: number | null;
  retryAfter: string | null;
  body: string;
  error: string | null;
}

async function transcribe(server: ServerProcess, file: Uint8Array): Promise<Outcome> {
  const form = new FormData();
  form.append('file', new Blob([file]), 'silence.flac');
  form.append('model', 'sunjata-1');
  try {
    const res = await fetch(`${server.baseUrl}/openai/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.apiKey}` },
      body: form,
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text(), error: null };
  } catch (err) {
    return { status: null, retryAfter: null, body: '', error: String((err as { cause?: unknown }).cause ?? err) };
  }
}

/** Requests the server is handling now, from its /metrics. */
async function inFlight(server: ServerProcess): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  return Number(/^kuma_http_in_flight_requests (\d+)/m.exec(text)?.[1] ?? 0);
}

/**
 * Starts a server with this grace period, sends `files` to be transcribed, and once they are all being
 * handled (and decoding) sends SIGTERM to the server's process group. Returns each outcome, the server's
 * log lines after its start, and how it exited.
 */
async function sigtermDuring(graceMs: number, files: Uint8Array[]): Promise<{ outcomes: Outcome[]; logs: string[]; exitCode: number | null }> {
  const server = await startServerProcess(
    { KUMA_DB_PATH: path.join(dir, `kuma-${graceMs}.sqlite`), KUMA_TMP_DIR: dir, KUMA_SHUTDOWN_GRACE_MS: String(graceMs) },
    'test/fixtures/serve-with-models.ts',
    { ownProcessGroup: true },
  );
  const logs: string[] = [];
  server.child.stdout!.setEncoding('utf8').on('data', (text: string) => logs.push(...text.split('\n').filter(Boolean)));
  const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
  try {
    // One transcription first, so the decoder processes are up and working when the signal comes, as on a
    // server that has been serving for a while.
    expect((await transcribe(server, warmUpFile)).status).toBe(200);
    const outcomes = Promise.all(files.map((file) => transcribe(server, file)));
    // All of them handled (one more in flight: the /metrics request itself), then a moment to be decoding.
    await expect.poll(() => inFlight(server), { timeout: 30_000, interval: 100 }).toBeGreaterThanOrEqual(files.length + 1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    process.kill(-server.pid, 'SIGTERM');
    return { outcomes: await outcomes, logs, exitCode: await exited };
  } finally {
    try {
      process.kill(-server.pid, 'SIGKILL'); // whatever is left of the group, if the test failed midway
    } catch {
      // already gone
    }
  }
}

const errorLines = (logs: string[]) => logs.filter((line) => /"level":(50|60)/.test(line));

it('finishes in-flight transcriptions within the grace period when the server and its children get SIGTERM', async () => {
  const { outcomes, logs, exitCode } = await sigtermDuring(120_000, [shortFile, shortFile, shortFile]);
  for (const outcome of outcomes) {
    expect(outcome).toMatchObject({ status: 200, error: null });
    expect(JSON.parse(outcome.body)).toEqual({ text: '', usage: { type: 'duration', seconds: 240 } });
  }
  expect(errorLines(logs)).toEqual([]);
  expect(exitCode).toBe(0);
}, 180_000);

it('answers 503 with Retry-After to transcriptions still running when the grace period runs out', async () => {
  const { outcomes, logs, exitCode } = await sigtermDuring(1_000, [longFile, longFile, longFile]);
  for (const outcome of outcomes) {
    expect(outcome).toMatchObject({ status: 503, error: null, retryAfter: expect.stringMatching(/^\d+$/) });
    expect(JSON.parse(outcome.body)).toMatchObject({ error: { code: 'service_unavailable', message: expect.stringMatching(/shutting down/) } });
  }
  expect(errorLines(logs)).toEqual([]);
  expect(exitCode).toBe(0);
}, 180_000);
