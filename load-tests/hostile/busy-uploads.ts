/**
 * load-tests/hostile/busy-uploads: do uploads of 2–20 MB all get an HTTP status while the CPU is busy (issue
 * P12 point 2)? A Kuma process with the demo ASR model (sunjata-1, as in models/kuma-models.json) runs beside
 * two busy-loop processes; `--uploads` WAV uploads (48 kHz stereo, sizes spread evenly over 2–20 MB, noise at a
 * low level so the model has work) go to POST /openai/v1/audio/transcriptions, `--concurrency` at a time, each a fresh
 * connection. For each: its HTTP status, or the error the client saw instead (a reset, a close with no answer)
 * and after how long. PASS when every upload got a status (any status: a 503 with Retry-After is an answer).
 * Run: `npm run bench:busy-uploads [-- --uploads 60 --concurrency 12 --busy 2 --no-write]`; `--server-dir DIR` serves
 * from another checkout (its node_modules and models/demo linked in), to measure a baseline the same way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startModelServer } from '../model-server.js';
import { percentile, recordSection } from '../results.js';

const { values } = parseArgs({
  options: {
    uploads: { type: 'string', default: '60' },
    concurrency: { type: 'string', default: '12' },
    busy: { type: 'string', default: '2' },
    'min-mb': { type: 'string', default: '2' },
    'max-mb': { type: 'string', default: '20' },
    label: { type: 'string', default: '' },
    /** Another checkout of Kuma to serve from (e.g. the commit before a fix, its node_modules and models/demo linked in). */
    'server-dir': { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
const UPLOADS = Number(values.uploads);
const CONCURRENCY = Number(values.concurrency);
const BUSY = Number(values.busy);
const MIN_BYTES = Number(values['min-mb']) * 1e6;
const MAX_BYTES = Number(values['max-mb']) * 1e6;

/**
 * A 48 kHz stereo 16-bit WAV of `bytes` bytes (what a phone or a browser records): quiet noise from a fixed
 * seed, the same files on every run. 20 MB is 104 s of audio, so the model's share of a run stays short.
 */
function noiseWav(bytes: number, seed: number): Buffer {
  const pcm = Buffer.alloc(Math.floor((bytes - 44) / 4) * 4);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < pcm.length; i += 2) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    pcm.writeInt16LE(((x >>> 0) % 2001) - 1000, i); // ≈ −30 dBFS
  }
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(2, 22); // channels
  header.writeUInt32LE(48000, 24);
  header.writeUInt32LE(48000 * 4, 28); // bytes per second
  header.writeUInt16LE(4, 32); // bytes per frame
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([header, pcm]);
}

interface Outcome {
  bytes: number;
  status: number | null;
  retryAfter: string | null;
  error: string | null;
  seconds: number;
}

const serverDir = values['server-dir'] ? path.resolve(values['server-dir']) : undefined;
const server = await startModelServer([{ id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: path.resolve('models/demo/ctc-wav2vec2'), maxQueue: 512 }], serverDir);
const busyLoops: ChildProcess[] = Array.from({ length: BUSY }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));

/**
 * One upload on a fresh connection (node:http, agent off), as separate clients would send it, with no client
 * timeout: a busy server may take minutes, and what is measured is whether it answers at all.
 */
function upload(bytes: number, seed: number): Promise<Outcome> {
  const boundary = `kuma-busy-${seed}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nsunjata-1\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="noise-${seed}.wav"\r\nContent-Type: audio/wav\r\n\r\n`),
    noiseWav(bytes, seed),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const t0 = performance.now();
  const seconds = () => (performance.now() - t0) / 1000;
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: server.port,
        path: '/openai/v1/audio/transcriptions',
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': body.length },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            bytes,
            status: res.statusCode ?? 0,
            retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
            error: null,
            seconds: seconds(),
          }),
        );
        res.on('error', (err: NodeJS.ErrnoException) =>
          resolve({ bytes, status: null, retryAfter: null, error: `${err.code ?? err.message} (in the body)`, seconds: seconds() }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ bytes, status: null, retryAfter: null, error: err.code ?? err.message, seconds: seconds() }));
    req.end(body);
  });
}

const sizes = Array.from({ length: UPLOADS }, (_, i) => Math.round(MIN_BYTES + ((MAX_BYTES - MIN_BYTES) * i) / Math.max(1, UPLOADS - 1)));
// Big and small interleaved, so every slot sees both.
const order = sizes.map((bytes, i) => ({ bytes, seed: i + 1 })).sort((a, b) => ((a.seed * 7919) % UPLOADS) - ((b.seed * 7919) % UPLOADS));
const outcomes: Outcome[] = [];
const started = performance.now();
try {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < order.length) {
        const { bytes, seed } = order[next++]!;
        const outcome = await upload(bytes, seed);
        outcomes.push(outcome);
        process.stdout.write(`${(bytes / 1e6).toFixed(1)} MB → ${outcome.status ?? outcome.error} after ${outcome.seconds.toFixed(1)} s\n`);
      }
    }),
  );
} finally {
  for (const loop of busyLoops) loop.kill('SIGKILL');
  await server.stop();
}
const wallSeconds = (performance.now() - started) / 1000;

const byStatus = new Map<string, number>();
for (const o of outcomes) {
  const key = o.status === null ? `no status (${o.error})` : String(o.status) + (o.status === 503 ? ` (Retry-After ${o.retryAfter ?? 'missing'})` : '');
  byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
}
const lost = outcomes.filter((o) => o.status === null);
const missingRetryAfter = outcomes.filter((o) => o.status === 503 && !o.retryAfter).length;
const pass = lost.length === 0 && missingRetryAfter === 0;
const rows = [
  '| uploads | with a status | without (reset / closed) | outcomes | lost after s | latency p50 / max s | wall s | result |',
  '|---:|---:|---:|---|---|---:|---:|---|',
  `| ${outcomes.length} | ${outcomes.length - lost.length} | ${lost.length} | ${[...byStatus].map(([k, n]) => `${k}: ${n}`).join(', ')} | ${lost.map((o) => o.seconds.toFixed(1)).join(' ') || '–'} | ${percentile(
    outcomes.map((o) => o.seconds),
    50,
  ).toFixed(1)} / ${Math.max(...outcomes.map((o) => o.seconds)).toFixed(1)} | ${wallSeconds.toFixed(0)} | ${pass ? 'PASS' : 'FAIL'} |`,
];
recordSection(
  `busy-uploads${values.label ? ` — ${values.label}` : ''}`,
  [
    `Server: ${serverDir ? `the checkout in ${serverDir}` : 'this checkout'}, its own process, sunjata-1 on the demo wav2vec2 CTC model (1 replica, queue 512), default limits; ${BUSY} busy-loop processes beside it; client (node:http, one connection per upload, no client timeout) in this process.`,
    `${UPLOADS} uploads of ${MIN_BYTES / 1e6}–${MAX_BYTES / 1e6} MB 48 kHz stereo WAV (quiet noise), ${CONCURRENCY} at a time. PASS = every upload got an HTTP status, and every 503 a Retry-After.`,
  ],
  rows,
  !values['no-write'],
);
process.exitCode = pass ? 0 : 1;
