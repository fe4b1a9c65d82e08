/**
 * Long uploads against a real server process with the demo models, its memory read from /proc:
 * - a 0.9 MB FLAC of 7,199 s of silence (P6 item 7: it used to expand to 1.75 GB and fail) is decoded
 *   and transcribed window by window: 200, the whole duration billed, the server's resident memory growing
 *   by less than PEAK_GROWTH_BOUND_MB;
 * - three 20-minute ones at once, and a short request from another account sent while they run: all
 *   answered, the short one before the long ones finish (it gets turns on the model between their chunks).
 *   (Three of the 7,199 s files at once take three minutes of CPU here: that run is in load-tests/long-audio.)
 * - a 10-minute recording (19 MB WAV) transcribed exactly, under the same bound.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { runFfmpeg } from '../unit/codecs/helpers/ffmpeg.js';

/**
 * Growth of the server's peak resident memory (all threads) over its resident memory before a scenario.
 * Per request: the upload's bytes, a few 10 s windows of 16 kHz samples in flight (decoder → engine), the
 * decoder's WASM heap, the ASR job's two chunks of audio and one chunk's model activations — tens of MB;
 * the bound leaves room for the garbage collector's lag. Before streaming, one such FLAC grew it by 2.6 GB.
 */
const PEAK_GROWTH_BOUND_MB = 250;
const SILENCE_SECONDS = 7199;
const CONCURRENT_SILENCE_SECONDS = 1200;

let server: ServerProcess;
let silence: Uint8Array;
let shorterSilence: Uint8Array;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-long-'));

beforeAll(async () => {
  const silentFlac = (seconds: number) =>
    runFfmpeg(['-f', 'lavfi', '-i', 'anullsrc=r=44100:cl=mono', '-t', String(seconds), '-c:a', 'flac', '-f', 'flac', 'pipe:1']).then((b) => new Uint8Array(b));
  [server, silence, shorterSilence] = await Promise.all([
    startServerProcess({ KUMA_DB_PATH: path.join(dir, 'kuma.sqlite'), KUMA_TMP_DIR: dir }),
    silentFlac(SILENCE_SECONDS),
    silentFlac(CONCURRENT_SILENCE_SECONDS),
  ]);
}, 180_000);

afterAll(() => {
  server?.child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

const statusMb = (field: 'VmHWM' | 'VmRSS') =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${server.pid}/status`, 'utf8'))![1]) / 1024;

/** Runs `work`, returning how far the server's peak resident memory rose above its resident memory before. */
async function peakGrowthMb(work: () => Promise<void>): Promise<number> {
  fs.writeFileSync(`/proc/${server.pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
  const before = statusMb('VmRSS');
  await work();
  return statusMb('VmHWM') - before;
}

async function transcribe(file: Uint8Array, name: string, format: string, apiKey = server.apiKey): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('file', new Blob([file]), name);
  form.append('response_format', format);
  const res = await fetch(`${server.baseUrl}/openai/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
  return { status: res.status, body: await res.json() };
}

it('transcribes 7,199 s of silence from a 0.9 MB FLAC, billing every second, in bounded memory', async () => {
  expect(silence.length).toBeLessThan(1_500_000);
  let result: { status: number; body: any } | undefined;
  const growth = await peakGrowthMb(async () => {
    result = await transcribe(silence, 'silence.flac', 'json');
  });
  expect(result).toEqual({ status: 200, body: { text: '', usage: { type: 'duration', seconds: SILENCE_SECONDS } } });
  process.stderr.write(
    `long-audio: ${SILENCE_SECONDS} s silent FLAC (${(silence.length / 1e6).toFixed(2)} MB): server peak RSS +${growth.toFixed(0)} MB (bound ${PEAK_GROWTH_BOUND_MB} MB)\n`,
  );
  expect(growth).toBeLessThan(PEAK_GROWTH_BOUND_MB);
}, 600_000);

it('three long uploads at once: all answered, and a short request from another account is served while they run', async () => {
  const finished: string[] = [];
  const phrase = 'i ni ce n fa ni n ba bɛ';
  const growth = await peakGrowthMb(async () => {
    const long = [1, 2, 3].map(async (n) => {
      const result = await transcribe(shorterSilence, 'silence.flac', 'json');
      finished.push(`long ${n}`);
      return result;
    });
    // Sent once the long ones are in: the server has read their uploads and started on them.
    await new Promise((r) => setTimeout(r, 1000));
    const short = await transcribe(wavBytes(speakDemo(phrase, 16000).samples, 16000), 'short.wav', 'json', server.otherApiKey);
    finished.push('short');
    expect(short).toMatchObject({ status: 200, body: { text: phrase } });
    for (const result of await Promise.all(long)) expect(result).toMatchObject({ status: 200, body: { usage: { seconds: CONCURRENT_SILENCE_SECONDS } } });
  });
  // Not starved: the short request did not wait for the long ones to finish.
  expect(finished.indexOf('short')).toBeLessThan(3);
  process.stderr.write(
    `long-audio: 3 × ${CONCURRENT_SILENCE_SECONDS} s + a short request: server peak RSS +${growth.toFixed(0)} MB; finished in order ${finished.join(', ')}\n`,
  );
  expect(growth).toBeLessThan(PEAK_GROWTH_BOUND_MB);
}, 600_000);

it('transcribes a 10-minute recording exactly, in bounded memory', async () => {
  // 104 phrases of ~4.2 s with 1.5 s pauses: just over 10 minutes.
  const words = ['i', 'ni', 'ce', 'n', 'fa', 'ba', 'bɛ', 'malo', 'dun', 'kɛnɛ', 'ɲɔ', 'ŋa', 'sugu', 'taa'];
  const phrases: string[] = [];
  for (let i = 0; phrases.length < 104; i++) phrases.push(Array.from({ length: 9 }, (_, j) => words[(i * 7 + j * 3) % words.length]).join(' '));
  const audio = spokenPhrases(phrases, 16000, 1.5);
  expect(audio.seconds).toBeGreaterThan(600);
  let result: { status: number; body: any } | undefined;
  const growth = await peakGrowthMb(async () => {
    result = await transcribe(wavBytes(audio.samples, 16000), 'long.wav', 'verbose_json');
  });
  expect(result!.status).toBe(200);
  expect(result!.body.text).toBe(phrases.join(' '));
  expect(result!.body.duration).toBeCloseTo(audio.seconds, 1);
  // Absolute times survive the cutting into pieces: the last phrase starts where it was spoken.
  expect(Math.abs(result!.body.segments.at(-1).start - audio.spans.at(-1)!.start)).toBeLessThan(0.03);
  process.stderr.write(
    `long-audio: ${audio.seconds.toFixed(0)} s of speech (WAV): server peak RSS +${growth.toFixed(0)} MB (bound ${PEAK_GROWTH_BOUND_MB} MB)\n`,
  );
  expect(growth).toBeLessThan(PEAK_GROWTH_BOUND_MB);
}, 300_000);
