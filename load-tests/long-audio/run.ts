/**
 * load-tests/long-audio: what long uploads cost the server's memory (P6 item 7). A Kuma process with the
 * demo ASR model (sunjata-1, 1 replica) gets, in turn:
 *   1. one FLAC of 7,199 s of digital silence (ffmpeg's default FLAC settings, 44.1 kHz mono: ≈1.3 MB);
 *   2. three of them at once, plus a 2 s WAV from another account sent while they run;
 *   3. one 10-minute WAV of demo speech (19 MB).
 * For each: the HTTP status, the duration the server reports, and the server's peak resident memory
 * (VmHWM, reset through /proc/<pid>/clear_refs before each scenario) minus its resident memory before it.
 * Appends a section to load-tests/RESULTS.md. Run: `npx tsx load-tests/long-audio/run.ts [--no-write]`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { runFfmpeg } from '../../test/unit/codecs/helpers/ffmpeg.js';
import { spokenPhrases, wavBytes } from '../../test/helpers/audio.js';
import { recordSection } from '../results.js';

const { values } = parseArgs({ options: { 'no-write': { type: 'boolean', default: false }, seconds: { type: 'string', default: '7199' } } });
const SILENCE_SECONDS = Number(values.seconds);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-long-load-'));
const manifest = path.join(dir, 'manifest.json');
fs.writeFileSync(
  manifest,
  JSON.stringify({ models: [{ id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: path.resolve('models/demo/ctc-wav2vec2'), replicas: 1, maxQueue: 32 }] }),
);
const child = spawn(process.execPath, ['--import', 'tsx', 'load-tests/serve-with-models.ts', path.join(dir, 'kuma.sqlite'), manifest], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const server = await new Promise<{ port: number; apiKey: string; otherApiKey: string; pid: number }>((resolve, reject) => {
  readline.createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line)));
  child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
});
const url = `http://127.0.0.1:${server.port}/openai/v1/audio/transcriptions`;

const statusMb = (field: 'VmHWM' | 'VmRSS') =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${server.pid}/status`, 'utf8'))![1]) / 1024;

async function transcribe(file: Uint8Array, name: string, apiKey = server.apiKey): Promise<{ status: number; duration?: number; ms: number; text?: string }> {
  const form = new FormData();
  form.append('file', new Blob([file]), name);
  form.append('model', 'sunjata-1');
  form.append('response_format', 'verbose_json');
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
  const body = (await res.json()) as { duration?: number; text?: string };
  return { status: res.status, duration: body.duration, text: body.text, ms: performance.now() - t0 };
}

/** Runs `work` after resetting the server's peak; returns its result with the peak's growth over the resident size before. */
async function measured<T>(work: () => Promise<T>): Promise<{ result: T; baseMb: number; growthMb: number }> {
  fs.writeFileSync(`/proc/${server.pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
  const baseMb = statusMb('VmRSS');
  const result = await work();
  return { result, baseMb, growthMb: statusMb('VmHWM') - baseMb };
}

const silence = await runFfmpeg(['-f', 'lavfi', '-i', `anullsrc=r=44100:cl=mono`, '-t', String(SILENCE_SECONDS), '-c:a', 'flac', '-f', 'flac', 'pipe:1']);
const short = wavBytes(speakDemo('i ni ce n fa ni n ba bɛ', 16000).samples, 16000);
const words = ['i', 'ni', 'ce', 'n', 'fa', 'ba', 'bɛ', 'malo', 'dun', 'kɛnɛ', 'ɲɔ', 'ŋa', 'sugu', 'taa'];
const phrases = Array.from({ length: 104 }, (_, i) => Array.from({ length: 9 }, (_, j) => words[(i * 7 + j * 3) % words.length]).join(' '));
const speech = spokenPhrases(phrases, 16000, 1.5);
const speechWav = wavBytes(speech.samples, 16000);

await transcribe(short, 'warm.wav'); // workers and decoders warm
const rows = ['| scenario | upload | statuses | duration s | server RSS before MB | peak growth MB | short request ms |', '|---|---:|---|---:|---:|---:|---:|'];
const mb = (n: number) => (n / 1024 / 1024).toFixed(2);

const one = await measured(() => transcribe(silence, 'silence.flac'));
rows.push(
  `| 1 × ${SILENCE_SECONDS} s silence FLAC | ${mb(silence.length)} MB | ${one.result.status} | ${one.result.duration?.toFixed(1)} | ${one.baseMb.toFixed(0)} | ${one.growthMb.toFixed(0)} | |`,
);
process.stdout.write(rows.at(-1)! + '\n');

const three = await measured(async () => {
  const long = [0, 1, 2].map(() => transcribe(silence, 'silence.flac'));
  await new Promise((r) => setTimeout(r, 500)); // the three are decoding or queued by now
  const shortOne = await transcribe(short, 'short.wav', server.otherApiKey);
  return { long: await Promise.all(long), shortOne };
});
rows.push(
  `| 3 × ${SILENCE_SECONDS} s silence FLAC + 2 s WAV (other key) | ${mb(silence.length)} MB each | ${three.result.long.map((r) => r.status).join(' ')} / ${three.result.shortOne.status} | ${three.result.long.map((r) => r.duration?.toFixed(0)).join(' ')} | ${three.baseMb.toFixed(0)} | ${three.growthMb.toFixed(0)} | ${three.result.shortOne.ms.toFixed(0)} |`,
);
process.stdout.write(rows.at(-1)! + '\n');

const ten = await measured(() => transcribe(speechWav, 'speech.wav'));
if (ten.result.text !== phrases.join(' ')) throw new Error('the 10-minute transcript is wrong');
rows.push(
  `| 1 × ${speech.seconds.toFixed(0)} s demo speech WAV (exact transcript) | ${mb(speechWav.length)} MB | ${ten.result.status} | ${ten.result.duration?.toFixed(1)} | ${ten.baseMb.toFixed(0)} | ${ten.growthMb.toFixed(0)} | |`,
);
process.stdout.write(rows.at(-1)! + '\n');

child.stdin!.end();
await new Promise((resolve) => child.once('exit', resolve));
fs.rmSync(dir, { recursive: true, force: true });

recordSection(
  'long-audio',
  [
    'Server: its own process, sunjata-1 on the demo wav2vec2 CTC model (1 replica, queue 32), default limits (7,200 s, 25 MiB), 1 decoder thread; client (fetch) in this process.',
    'peak growth = VmHWM after the scenario − VmRSS before it (peak reset through /proc/<pid>/clear_refs); short request ms = client latency of the 2 s WAV sent 0.5 s after the three long ones.',
  ],
  rows,
  !values['no-write'],
);
