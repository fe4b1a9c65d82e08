/**
 * A 10-minute recording: uploaded as a 19 MB WAV to a real server process with the demo models, cut by
 * VAD into ≤ 30 s pieces, transcribed exactly — while the server's peak resident memory (VmHWM, all its
 * threads) stays under a stated bound.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';

/** The bound this test holds the server to: decoded audio (38 MB at 16 kHz float) + 7 model workers + headroom. */
const PEAK_RSS_BOUND_MB = 900;

let child: ChildProcess;
let server: { port: number; apiKey: string; pid: number };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-long-'));

beforeAll(async () => {
  child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/serve-with-models.ts'], {
    env: { ...process.env, KUMA_DB_PATH: path.join(dir, 'kuma.sqlite'), KUMA_TMP_DIR: dir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`server exited early (${code})`)));
  });
  server = JSON.parse(line);
}, 120_000);

afterAll(() => {
  child?.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

it('transcribes a 10-minute recording exactly with the server under its memory bound', async () => {
  // 104 phrases of ~4.2 s with 1.5 s pauses: just over 10 minutes.
  const words = ['i', 'ni', 'ce', 'n', 'fa', 'ba', 'bɛ', 'malo', 'dun', 'kɛnɛ', 'ɲɔ', 'ŋa', 'sugu', 'taa'];
  const phrases: string[] = [];
  for (let i = 0; phrases.length < 104; i++) phrases.push(Array.from({ length: 9 }, (_, j) => words[(i * 7 + j * 3) % words.length]).join(' '));
  const audio = spokenPhrases(phrases, 16000, 1.5);
  expect(audio.seconds).toBeGreaterThan(600);
  const before = peakRssMb(server.pid);

  const body = new FormData();
  body.append('file', new Blob([wavBytes(audio.samples, 16000)]), 'long.wav');
  body.append('response_format', 'verbose_json');
  const res = await fetch(`http://127.0.0.1:${server.port}/openai/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${server.apiKey}` }, body });
  expect(res.status).toBe(200);
  const result = (await res.json()) as { text: string; segments: Array<{ start: number; text: string }>; duration: number };
  expect(result.text).toBe(phrases.join(' '));
  expect(result.duration).toBeCloseTo(audio.seconds, 1);
  // Absolute times survive the cutting into pieces: the last phrase starts where it was spoken.
  expect(Math.abs(result.segments.at(-1)!.start - audio.spans.at(-1)!.start)).toBeLessThan(0.03);

  const peak = peakRssMb(server.pid);
  process.stderr.write(`long-audio: ${audio.seconds.toFixed(0)} s; server peak RSS ${before.toFixed(0)} MB before, ${peak.toFixed(0)} MB after (bound ${PEAK_RSS_BOUND_MB} MB)\n`);
  expect(peak).toBeLessThan(PEAK_RSS_BOUND_MB);
}, 180_000);
