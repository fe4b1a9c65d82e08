/**
 * load-tests/asr: 10, 50 and 100 concurrent clients transcribing 5 s of demo speech (a WAV upload each)
 * against a Kuma process with the demo models — throughput, p50/p99 latency, and server overhead
 * (latency minus the engine time the server reports in Server-Timing, which includes waiting for a
 * free model replica). Appends a section to load-tests/RESULTS.md. Run: `npm run bench:asr [-- --no-write]`.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { percentile, recordSection } from '../results.js';
import { startModelServer } from '../model-server.js';

const { values } = parseArgs({ options: { 'no-write': { type: 'boolean', default: false }, requests: { type: 'string', default: '3' } } });
const PER_CLIENT = Number(values.requests);
const LEVELS = [10, 50, 100];
const TEXT = 'i ni ce n fa ni n ba bɛ malo dun a ka kɛnɛ';

function wav(samples: Float32Array, rate: number): Buffer {
  const data = Buffer.alloc(samples.length * 2);
  samples.forEach((v, i) => data.writeInt16LE(Math.round(Math.max(-1, Math.min(1, v)) * 32767), i * 2));
  const h = Buffer.alloc(44);
  (h.write('RIFF', 0), h.writeUInt32LE(36 + data.length, 4), h.write('WAVEfmt ', 8), h.writeUInt32LE(16, 16), h.writeUInt16LE(1, 20), h.writeUInt16LE(1, 22));
  (h.writeUInt32LE(rate, 24),
    h.writeUInt32LE(rate * 2, 28),
    h.writeUInt16LE(2, 32),
    h.writeUInt16LE(16, 34),
    h.write('data', 36),
    h.writeUInt32LE(data.length, 40));
  return Buffer.concat([h, data]);
}

// Same model as the default manifest, with a queue deep enough that 100 clients wait instead of getting 503.
const hello = await startModelServer([{ id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: path.resolve('models/demo/ctc-wav2vec2'), replicas: 1, maxQueue: 256 }]);
const url = `http://127.0.0.1:${hello.port}/openai/v1/audio/transcriptions`;
const speech = speakDemo(TEXT, 16000);
const audioSeconds = speech.samples.length / 16000;
const body = wav(speech.samples, 16000);

interface Sample {
  ms: number;
  engineMs: number;
  decodeMs: number;
  status: number;
}

async function one(): Promise<Sample> {
  const form = new FormData();
  form.append('file', new Blob([body]), 'speech.wav');
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${hello.apiKey}` }, body: form });
  const text = await res.text();
  const ms = performance.now() - t0;
  if (res.status === 200 && JSON.parse(text).text !== TEXT) throw new Error(`wrong transcript: ${text}`);
  const timing = res.headers.get('server-timing') ?? '';
  const dur = (name: string) => Number(new RegExp(`${name};dur=([\\d.]+)`).exec(timing)?.[1] ?? NaN);
  return { ms, engineMs: dur('engine'), decodeMs: dur('decode'), status: res.status };
}

const pct = percentile;

await Promise.all(Array.from({ length: 4 }, one)); // warm-up
const rows = [
  '| clients | requests | 200 | other | req/s | audio × real time | p50 ms | p99 ms | engine p50 ms | decode p50 ms | overhead p50 ms | overhead p99 ms |',
  '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
];
for (const clients of LEVELS) {
  const samples: Sample[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = 0; i < PER_CLIENT; i++) samples.push(await one());
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const ok = samples.filter((s) => s.status === 200);
  const overhead = ok.map((s) => s.ms - s.engineMs);
  rows.push(
    `| ${clients} | ${samples.length} | ${ok.length} | ${samples.length - ok.length} | ${(ok.length / seconds).toFixed(1)} | ${((ok.length * audioSeconds) / seconds).toFixed(0)} | ${pct(
      ok.map((s) => s.ms),
      50,
    ).toFixed(0)} | ${pct(
      ok.map((s) => s.ms),
      99,
    ).toFixed(0)} | ${pct(
      ok.map((s) => s.engineMs),
      50,
    ).toFixed(0)} | ${pct(
      ok.map((s) => s.decodeMs),
      50,
    ).toFixed(1)} | ${pct(overhead, 50).toFixed(1)} | ${pct(overhead, 99).toFixed(1)} |`,
  );
  process.stdout.write(rows.at(-1)! + '\n');
}
await hello.stop();

recordSection(
  'asr',
  [
    `Load: each client sends ${PER_CLIENT} requests back to back; each request uploads ${audioSeconds.toFixed(1)} s of demo speech (16 kHz WAV, ${(body.length / 1024).toFixed(0)} KiB) and gets json; the transcript is checked.`,
    'Server: its own process, sunjata-1 on the demo wav2vec2 CTC model, 1 replica, queue 256; load generator (fetch) in this process, on the same 2 cores.',
    'engine = time from the first to the last segment inside the server, including waiting for the replica (Server-Timing); overhead = client latency − engine: HTTP, multipart, decoding, formatting, ledger.',
  ],
  rows,
  !values['no-write'],
);
