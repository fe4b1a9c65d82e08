/**
 * load-tests/event-loop: does the server's event loop stay responsive while it transcribes long uploads
 * (issue P12 point 13)? Kuma with the demo models (models/kuma-models.json, as `npm start` serves them), its own
 * process, gets `--requests` REST transcriptions (POST /openai/v1/audio/transcriptions, verbose_json) of
 * `--seconds` of demo speech each (16 kHz WAV, all sent at once), while a worker thread of this process asks
 * GET /healthz every `--probe-ms` (one at a time) until they are all answered. /healthz does no work: its
 * latency is the time the request waited for the server's event loop. The server's own event-loop delay
 * over the run (its /metrics) is reported beside it. Target: max < 100 ms, in each of `--runs` runs, on an idle
 * machine. Appends a section to load-tests/RESULTS.md. Run: `npm run bench:event-loop [-- --runs 3 --no-write]` (`--server-dir DIR`: serve another checkout, a baseline);
 * `KUMA_BENCH_PROF=dir` writes the server's CPU profile there (load-tests/model-server.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { spokenPhrases, wavBytes } from '../../test/helpers/audio.js';
import { runFfmpeg } from '../../test/unit/codecs/helpers/ffmpeg.js';
import { startModelServer } from '../model-server.js';
import { percentile, recordSection } from '../results.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    requests: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '350' },
    'probe-ms': { type: 'string', default: '20' },
    /** wav: 16 kHz PCM as the models take it; mp3 / flac: 44.1 kHz, so the decoder decodes and resamples. */
    format: { type: 'string', default: 'wav' },
    label: { type: 'string', default: '' },
    /** Another checkout of Kuma to serve from (a baseline: its node_modules and models/demo linked in). */
    'server-dir': { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
const RUNS = Number(values.runs);
const REQUESTS = Number(values.requests);
const SECONDS = Number(values.seconds);
const PROBE_MS = Number(values['probe-ms']);
const TARGET_MS = 100;
const SERVER_DIR = values['server-dir'] ? path.resolve(values['server-dir']) : undefined;

/** The demo manifest, its model directories made absolute (the server reads it from a temp folder). */
function demoModels(): Array<Record<string, unknown>> {
  const manifest = JSON.parse(fs.readFileSync('models/kuma-models.json', 'utf8')) as { models: Array<Record<string, unknown>> };
  return manifest.models.map((m) => ({ ...m, dir: path.resolve('models', String(m.dir)) }));
}

/** `seconds` of demo speech: nine-word phrases with 1.5 s pauses, like a recorded conversation. */
function speechWav(seconds: number): Buffer {
  const words = ['i', 'ni', 'ce', 'n', 'fa', 'ba', 'bɛ', 'malo', 'dun', 'kɛnɛ', 'ɲɔ', 'ŋa', 'sugu', 'taa'];
  const phrases: string[] = [];
  let audio: ReturnType<typeof spokenPhrases>;
  do {
    for (let k = 0; k < 10; k++) phrases.push(Array.from({ length: 9 }, (_, j) => words[(phrases.length * 7 + j * 3) % words.length]).join(' '));
    audio = spokenPhrases(phrases, 16000, 1.5);
  } while (audio.seconds < seconds);
  return wavBytes(audio.samples.subarray(0, seconds * 16000), 16000);
}

interface RunResult {
  probes: number[];
  /** The server's own event-loop delay over the run (monitorEventLoopDelay, from its /metrics), ms. */
  serverLagMaxMs: number;
  statuses: number[];
  audioSeconds: number[];
  wallSeconds: number;
}

/**
 * The /healthz prober runs in a worker thread: this thread streams the uploads, and its own pauses would
 * otherwise count as the server's.
 */
const PROBER = `
const { parentPort, workerData } = require('node:worker_threads');
let stop = false;
parentPort.on('message', () => (stop = true));
(async () => {
  const probes = [];
  while (!stop) {
    const t0 = performance.now();
    const res = await fetch(workerData.url);
    await res.arrayBuffer();
    probes.push(performance.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, workerData.gapMs));
  }
  parentPort.postMessage(probes);
})();
`;

async function serverLagMaxMs(base: string): Promise<number> {
  const metrics = await (await fetch(`${base}/metrics`)).text();
  return Number(/^kuma_nodejs_eventloop_lag_max_seconds (\S+)/m.exec(metrics)?.[1] ?? NaN) * 1000;
}

async function oneRun(wav: Buffer): Promise<RunResult> {
  const server = await startModelServer(demoModels(), SERVER_DIR);
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const transcribe = async () => {
      const form = new FormData();
      form.append('file', new Blob([wav]), `long.${FORMAT}`);
      form.append('model', 'sunjata-1');
      form.append('response_format', 'verbose_json');
      const res = await fetch(`${base}/openai/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${server.apiKey}` }, body: form });
      const body = (await res.json()) as { duration?: number };
      return { status: res.status, seconds: body.duration ?? 0 };
    };
    await fetch(`${base}/healthz`); // route warm
    await serverLagMaxMs(base); // resets the server's event-loop histogram: the next read covers the run only
    const prober = new Worker(PROBER, { eval: true, workerData: { url: `${base}/healthz`, gapMs: PROBE_MS } });
    const probed = new Promise<number[]>((resolve) => prober.once('message', resolve));
    const t0 = performance.now();
    const answered = await Promise.all(Array.from({ length: REQUESTS }, transcribe));
    const wallSeconds = (performance.now() - t0) / 1000;
    prober.postMessage('stop');
    const probes = await probed;
    await prober.terminate();
    return {
      probes,
      serverLagMaxMs: await serverLagMaxMs(base),
      statuses: answered.map((r) => r.status),
      audioSeconds: answered.map((r) => r.seconds),
      wallSeconds,
    };
  } finally {
    await server.stop();
  }
}

const FORMAT = values.format!;
const wav = FORMAT === 'wav' ? speechWav(SECONDS) : await encoded(speechWav(SECONDS), FORMAT);

/** The WAV re-encoded by ffmpeg at 44.1 kHz (what phones and browsers record), as mp3 or flac. */
async function encoded(wav: Buffer, format: string): Promise<Buffer> {
  const codec = format === 'mp3' ? ['-c:a', 'libmp3lame', '-b:a', '128k', '-f', 'mp3'] : ['-c:a', 'flac', '-f', 'flac'];
  return runFfmpeg(['-f', 'wav', '-i', 'pipe:0', '-ar', '44100', ...codec, 'pipe:1'], wav);
}
const rows = [
  '| run | transcriptions | audio s each | wall s | /healthz probes | p50 ms | p99 ms | max ms | server event-loop delay max ms | max < 100 ms |',
  '|---:|---|---:|---:|---:|---:|---:|---:|---:|---|',
];
let pass = true;
for (let run = 1; run <= RUNS; run++) {
  const r = await oneRun(wav);
  const max = Math.max(...r.probes);
  const ok = max < TARGET_MS && r.statuses.every((s) => s === 200);
  pass &&= ok;
  rows.push(
    `| ${run} | ${r.statuses.join(' ')} | ${r.audioSeconds.map((s) => s.toFixed(0)).join(' ')} | ${r.wallSeconds.toFixed(0)} | ${r.probes.length} | ${percentile(r.probes, 50).toFixed(1)} | ${percentile(r.probes, 99).toFixed(1)} | ${max.toFixed(1)} | ${r.serverLagMaxMs.toFixed(1)} | ${ok ? 'yes' : 'NO'} |`,
  );
  process.stdout.write(`${rows.at(-1)}\n`);
}
recordSection(
  `event loop during long transcriptions${values.label ? ` — ${values.label}` : ''}`,
  [
    `Server: ${SERVER_DIR ? `the checkout in ${SERVER_DIR}` : 'this checkout'}, its own process, the demo models of models/kuma-models.json (sunjata-1: demo wav2vec2 CTC, 1 replica), default settings; client (fetch) in this process.`,
    `${REQUESTS} transcriptions at once of ${SECONDS} s of demo speech (${FORMAT === 'wav' ? '16 kHz WAV' : `44.1 kHz ${FORMAT.toUpperCase()}`}, ${(wav.length / 1e6).toFixed(1)} MB), verbose_json; GET /healthz one at a time, ${PROBE_MS} ms apart (from a worker thread, so the uploads' client work does not delay it), until all are answered. Target: /healthz max < ${TARGET_MS} ms in every run (on an idle machine).`,
    'server event-loop delay max: kuma_nodejs_eventloop_lag_max_seconds from /metrics (prom-client over monitorEventLoopDelay, 10 ms resolution), read just before the uploads (which resets it) and after the last answer.',
  ],
  rows,
  !values['no-write'],
);
process.exitCode = pass ? 0 : 1;
