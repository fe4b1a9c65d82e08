/**
 * `npm run bench:rest:real-size -- [--model wav2vec2-base] [--requests 4] [--no-write]`: the CPU one REST
 * transcription costs Kuma, against the model alone, at real size. For 10 s and 60 s of audio (a 16 kHz WAV):
 * - model only: raw onnxruntime-node (ort-worker.ts, same file, same intra-op threads) on plain back-to-back
 *   windows of at most 30 s (10 s: one run; 60 s: two), CPU of the runs;
 * - Kuma REST: POST /openai/v1/audio/transcriptions of the same audio, one request at a time, CPU of the server
 *   process and its children (the decoder processes) per request, after a warm-up request.
 * ratio = Kuma REST ÷ model only: what the server adds (context re-read at window joins, decoding the upload,
 * HTTP, JSON, billing) on top of the model's own work.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { defaultPackDir } from '../../models/real-size/generate.js';
import { spawnWorker } from '../../src/threads/spawn-worker.js';
import { startModelServer } from '../model-server.js';
import { percentile, recordSection } from '../results.js';
import type { OrtWorkerData } from './ort-worker.js';
import { serverThreads } from './model-only.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'wav2vec2-base' },
    requests: { type: 'string', default: '4' },
    'max-chunk-seconds': { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
const dir = path.join(defaultPackDir(), values.model);
const engine = (JSON.parse(fs.readFileSync(path.join(dir, '.complete.json'), 'utf8')) as { engine: string }).engine;
const REQUESTS = Number(values.requests);
const threads = serverThreads(engine);

/** CPU seconds of a process and all its descendants (utime + stime of each, from /proc). */
function treeCpu(root: number): number {
  const parents = new Map<number, number>();
  const cpu = new Map<number, number>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const fields = fs.readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]!.split(' ');
      parents.set(Number(name), Number(fields[1]));
      cpu.set(Number(name), (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  for (const [pid, seconds] of cpu) {
    for (let p: number | undefined = pid; p !== undefined && p > 1; p = parents.get(p)) {
      if (p === root) {
        total += seconds;
        break;
      }
    }
  }
  return total;
}

function wav(samples: Float32Array): Buffer {
  const data = Buffer.alloc(samples.length * 2);
  samples.forEach((v, i) => data.writeInt16LE(Math.round(Math.max(-1, Math.min(1, v)) * 32767), i * 2));
  const h = Buffer.alloc(44);
  (h.write('RIFF', 0), h.writeUInt32LE(36 + data.length, 4), h.write('WAVEfmt ', 8), h.writeUInt32LE(16, 16), h.writeUInt16LE(1, 20), h.writeUInt16LE(1, 22));
  (h.writeUInt32LE(16000, 24),
    h.writeUInt32LE(32000, 28),
    h.writeUInt16LE(2, 32),
    h.writeUInt16LE(16, 34),
    h.write('data', 36),
    h.writeUInt32LE(data.length, 40));
  return Buffer.concat([h, data]);
}

/** `seconds` of continuous demo speech (phrases back to back with short pauses), 16 kHz. */
function speech(seconds: number): Float32Array {
  const phrase = speakDemo('i ni ce n fa ni n ba bɛ malo dun a ka kɛnɛ', 16000).samples;
  const out = new Float32Array(seconds * 16000);
  for (let at = 0; at < out.length; at += phrase.length + 3200) out.set(phrase.subarray(0, Math.min(phrase.length, out.length - at)), at);
  return out;
}

async function modelOnlyCpu(seconds: number): Promise<number> {
  const data: OrtWorkerData = {
    file: path.join(dir, 'model.onnx'),
    intraOpThreads: threads,
    allowSpinning: false,
    layout: engine === 'ctc-nemo' ? 'nemo' : 'wav2vec2',
  };
  const worker = spawnWorker(new URL('./ort-worker.ts', import.meta.url), { workerData: data });
  await new Promise((resolve, reject) => (worker.once('message', resolve), worker.once('error', reject)));
  const run = (s: number) => new Promise<void>((resolve) => (worker.once('message', () => resolve()), worker.postMessage({ id: 0, seconds: s })));
  const windows = Array.from({ length: Math.ceil(seconds / 30) }, (_, i) => Math.min(30, seconds - i * 30));
  for (const w of windows) await run(w); // warm
  const samples: number[] = [];
  for (let r = 0; r < REQUESTS; r++) {
    const c0 = process.cpuUsage();
    for (const w of windows) await run(w);
    const c = process.cpuUsage(c0);
    samples.push((c.user + c.system) / 1e6);
  }
  await worker.terminate();
  return percentile(samples, 50);
}

// `--max-chunk-seconds`: Kuma's window for long audio (the runner's maxChunkSeconds; default its own).
const maxChunk = values['max-chunk-seconds'] ? Number(values['max-chunk-seconds']) : undefined;
const server = await startModelServer([{ id: 'sunjata-1', engine, dir, maxQueue: 64, ...(maxChunk ? { options: { maxChunkSeconds: maxChunk } } : {}) }]);
async function kumaCpu(seconds: number): Promise<{ cpu: number; wall: number }> {
  const body = new FormData();
  body.set('model', 'sunjata-1');
  body.set('file', new Blob([wav(speech(seconds))], { type: 'audio/wav' }), 'speech.wav');
  const post = async () => {
    const res = await fetch(`http://127.0.0.1:${server.port}/openai/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.apiKey}` },
      body,
    });
    if (res.status !== 200) throw new Error(`transcription ${res.status}: ${await res.text()}`);
    await res.text();
  };
  await post(); // warm
  const cpu: number[] = [];
  const wall: number[] = [];
  for (let r = 0; r < REQUESTS; r++) {
    const c0 = treeCpu(server.pid);
    const t0 = performance.now();
    await post();
    wall.push((performance.now() - t0) / 1000);
    cpu.push(treeCpu(server.pid) - c0);
  }
  return { cpu: percentile(cpu, 50), wall: percentile(wall, 50) };
}

const rows = [
  '| audio | model only, CPU s (plain ≤ 30 s windows) | Kuma REST, CPU s (server + decoders) | ratio | Kuma REST wall s | real-time factor |',
  '|---:|---:|---:|---:|---:|---:|',
];
for (const seconds of [10, 60]) {
  const model = await modelOnlyCpu(seconds);
  const kuma = await kumaCpu(seconds);
  const row = `| ${seconds} s | ${model.toFixed(2)} | ${kuma.cpu.toFixed(2)} | ${(kuma.cpu / model).toFixed(2)} | ${kuma.wall.toFixed(2)} | ${(kuma.wall / seconds).toFixed(3)} |`;
  rows.push(row);
  process.stderr.write(`${row}\n`);
}
await server.stop();
recordSection(
  `REST transcription at real size (${values.model})`,
  [
    `Model: ${values.model} (\`${engine}\`) from the real-size pack; ${threads} intra-op thread(s) on both sides; median of ${REQUESTS} requests (or runs) after a warm-up.${maxChunk ? ` Kuma's windows: maxChunkSeconds ${maxChunk}.` : ''}`,
    'CPU is counted per process tree from /proc (1/100 s ticks); the server also runs its idle timers meanwhile.',
  ],
  rows,
  !values['no-write'],
);
process.exit(0);
