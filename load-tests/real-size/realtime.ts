/**
 * `npm run bench:realtime:real-size`: OpenAI-Realtime transcription sessions against Kuma serving a real-size
 * recogniser from the pack (npm run models:real-size; random weights in the real architecture), at levels
 * up to saturation, beside the model-only limit measured in the same run.
 *
 *   npm run bench:realtime:real-size -- [--model wav2vec2-base|xls-r-300m|quartznet15x5] [--levels 1,5,10,20,30]
 *     [--activity 0.4] [--seconds 40] [--long-turn 40] [--streaming JSON] [--replicas N] [--threads N] [--no-write]
 *
 * `--streaming` sets the model entry's options.streaming (default: the pack's own, PACK_STREAMING).
 *
 * Each session streams a cycle of silence, a demo-voice phrase and silence (the phrase `activity` of the
 * time) in 20 ms frames at real-time pace. Random weights give random text, so only latency and completion
 * count: speech_stopped → completed p50 / p99, first delta, turns completed and failed against phrases sent,
 * late frames, server CPU. `--long-turn S`: one more scenario where one session speaks S seconds without a
 * pause while `--levels`' first level of other sessions run their cycles.
 *
 * Model-only limit: raw onnxruntime-node (load-tests/real-size/ort-worker.ts) on the same model file with the
 * server's replica and thread settings, decoding the committed turn's audio (phrase + VAD padding) back to
 * back on every replica; limit = that throughput ÷ the audio a session commits per second.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { defaultPackDir } from '../../models/real-size/generate.js';
import { PACK_REPLICAS, PACK_STREAMING } from '../../models/real-size/pack-manifest.js';
import { spawnWorker } from '../../src/threads/spawn-worker.js';
import { startModelServer } from '../model-server.js';
import { percentile, recordSection } from '../results.js';
import type { WorkerInput, WorkerReport } from '../realtime/session-worker.js';
import { bestModelOnly } from './model-only.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'wav2vec2-base' },
    levels: { type: 'string', default: '1,5,10,20,30,40' },
    activity: { type: 'string', default: '0.4' },
    seconds: { type: 'string', default: '40' },
    'long-turn': { type: 'string' },
    /** The model entry's `options.streaming` (JSON), to measure other chunking settings. */
    streaming: { type: 'string' },
    /** The model entry's `replicas` and `intraOpThreads` (default: the server's by cores). */
    replicas: { type: 'string' },
    threads: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
const dir = path.join(defaultPackDir(), values.model);
const stamp = path.join(dir, '.complete.json');
if (!fs.existsSync(stamp)) throw new Error(`${dir} is not in the pack: npm run models:real-size -- --only ${values.model}`);
const engine = (JSON.parse(fs.readFileSync(stamp, 'utf8')) as { engine: string }).engine;
// The pack's own chunking for this model (what its manifest serves), unless --streaming says otherwise.
const streaming = values.streaming ? (JSON.parse(values.streaming) as Record<string, number>) : PACK_STREAMING[values.model];
// The pack's replicas for the model (PACK_REPLICAS) unless --replicas sets them.
const replicas = values.replicas ? Number(values.replicas) : PACK_REPLICAS[values.model!];
const LEVELS = values.levels.split(',').map(Number);
const ACTIVITY = Number(values.activity);
const SECONDS = Number(values.seconds);
const RATE = 24000;
const FRAME = RATE / 50;
const TEXT = 'n bɛ taa sugu la sini';
const phrase = speakDemo(TEXT, RATE).samples;
const turnDetection = { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 };
const setup = JSON.stringify({
  type: 'session.update',
  session: {
    type: 'transcription',
    audio: { input: { format: { type: 'audio/pcm', rate: RATE }, transcription: { model: 'sunjata-1' }, turn_detection: turnDetection } },
  },
});

/** One cycle of append frames: `lead` s of silence, the speech, silence to make the speech `activity` of it. */
function cycleFrames(speech: Float32Array, activity: number, lead = 1): { frames: string[]; seconds: number; speechStartFrame: number } {
  const tail = Math.max(0.8, speech.length / RATE / activity - speech.length / RATE - lead);
  const cycle = new Float32Array(Math.ceil((lead * RATE + speech.length + tail * RATE) / FRAME) * FRAME);
  cycle.set(speech, lead * RATE);
  const pcm = Buffer.alloc(cycle.length * 2);
  cycle.forEach((v, i) => pcm.writeInt16LE(Math.round(Math.max(-1, Math.min(1, v)) * 32767), i * 2));
  const frames = Array.from({ length: cycle.length / FRAME }, (_, i) =>
    JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm.subarray(i * FRAME * 2, (i + 1) * FRAME * 2).toString('base64') }),
  );
  return { frames, seconds: cycle.length / RATE, speechStartFrame: Math.floor((lead * RATE) / FRAME) };
}

process.env.KUMA_REALTIME_MAX_SESSIONS_PER_KEY ??= '0';
const server = await startModelServer([
  {
    id: 'sunjata-1',
    engine,
    dir,
    maxQueue: 4096,
    ...(streaming ? { options: { streaming } } : {}),
    ...(replicas ? { replicas } : {}),
    ...(values.threads ? { intraOpThreads: Number(values.threads) } : {}),
  },
  { id: 'vad', engine: 'silero-vad', dir: '.', maxQueue: 4096 },
]);
const base = `127.0.0.1:${server.port}/openai/v1`;
const cpuSeconds = (pid: number) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

/** Realtime chunks encoded so far, by kind (eager / full / final), from the server's /metrics. */
async function chunkCounts(): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^kuma_realtime_chunks_total\{kind="(\w+)"\} (\d+)/gm)) counts[m[1]!] = Number(m[2]);
  return counts;
}

async function runSessions(groups: Array<{ sessions: number; cycle: ReturnType<typeof cycleFrames> }>, seconds: number) {
  const workers = groups.map(({ sessions, cycle }) => {
    const data: WorkerInput = {
      url: `ws://${base}/realtime?intent=transcription`,
      apiKey: server.apiKey,
      sessions,
      setup,
      frames: cycle.frames,
      speechStartFrame: cycle.speechStartFrame,
      text: TEXT,
      staggerMs: cycle.seconds * 1000,
      client: 'raw',
    };
    return spawnWorker(new URL('../realtime/session-worker.ts', import.meta.url), { workerData: data });
  });
  const ask = <T>(worker: (typeof workers)[number], message: string) =>
    new Promise<T>((resolve, reject) => (worker.once('message', resolve), worker.once('error', reject), worker.postMessage(message)));
  await Promise.all(workers.map((w) => ask(w, 'ready?')));
  const chunks0 = await chunkCounts();
  const cpu0 = cpuSeconds(server.pid);
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const cpu = (cpuSeconds(server.pid) - cpu0) / ((performance.now() - t0) / 1000);
  // A turn spoken at the end gets its answer within the worker's grace (1.5 s) or counts as not completed.
  const reports = await Promise.all(workers.map((w) => ask<WorkerReport>(w, 'stop')));
  await Promise.all(workers.map((w) => w.terminate()));
  const chunks1 = await chunkCounts();
  const chunks = ['eager', 'full', 'final'].map((k) => (chunks1[k] ?? 0) - (chunks0[k] ?? 0)).join(' / ');
  return { reports, cpu, chunks };
}

const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : '—');
const pair = (list: number[]) => (list.length ? `${ms(percentile(list, 50))} / ${ms(percentile(list, 99))}` : '—');
const summarize = (r: WorkerReport) => {
  const stop = r.turns.flatMap((t) => (t.stopToFinalMs === null ? [] : [t.stopToFinalMs]));
  const first = r.turns.flatMap((t) => (t.firstDeltaMs === null ? [] : [t.firstDeltaMs]));
  const failed =
    Object.entries(r.failed)
      .map(([code, n]) => `${n} ${code}`)
      .join(', ') || '0';
  return { stop, first, failed };
};

const cycle = cycleFrames(phrase, ACTIVITY);
// What a turn commits: the phrase plus the VAD's prefix padding and the silence before speech_stopped.
const turnSeconds = phrase.length / RATE + 0.3 + 0.5;
const limit = await bestModelOnly({
  dir,
  engine,
  seconds: turnSeconds,
  durationS: 15,
  ...(replicas ? { replicas } : {}),
  ...(values.threads ? { threads: Number(values.threads) } : {}),
});
const sessionsLimit = limit.audioPerSecond / (turnSeconds / cycle.seconds);

const rows = [
  '| sessions | phrases sent | completed | failed | speech_stopped → completed p50 / p99 ms | first delta p50 / p99 ms | frames late | server CPU (cores) | chunks eager / full / final | p99 ≤ 1 s |',
  '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
];
let capacity = 0;
for (const sessions of LEVELS) {
  const { reports, cpu, chunks } = await runSessions([{ sessions, cycle }], SECONDS);
  const r = reports[0]!;
  const { stop, first, failed } = summarize(r);
  const p99 = stop.length ? percentile(stop, 99) : Infinity;
  const allDone = r.turns.length > 0 && Object.keys(r.failed).length === 0 && r.turns.length >= r.speechStarted - sessions;
  if (p99 <= 1000 && allDone) capacity = Math.max(capacity, sessions);
  const row = `| ${sessions} | ${r.phrasesSent} | ${r.turns.length} | ${failed} | ${pair(stop)} | ${pair(first)} | ${r.framesLate} | ${cpu.toFixed(2)} | ${chunks} | ${p99 <= 1000 && allDone ? 'yes' : 'no'} |`;
  rows.push(row);
  process.stderr.write(`${row}\n`);
  if (r.errors.length) process.stderr.write(`errors: ${r.errors.slice(0, 5).join('; ')}\n`);
}

const notes = [
  `Model: ${values.model} (\`${engine}\`) from the real-size pack, served as sunjata-1 with ${replicas || values.threads ? `replicas ${replicas ?? 'by cores'}${values.replicas ? '' : replicas ? " (the pack's)" : ''}, intra-op threads ${values.threads ?? 'by cores'}` : "the server's default replicas and threads"}${streaming ? `, options.streaming ${JSON.stringify(streaming)}` : ''}${process.env.KUMA_ENGINE_INTRA_OP_THREADS ? ` (KUMA_ENGINE_INTRA_OP_THREADS=${process.env.KUMA_ENGINE_INTRA_OP_THREADS})` : ''}; Silero VAD; server_vad threshold 0.5, prefix 300 ms, silence 500 ms.`,
  `Sessions: each streams a ${cycle.seconds.toFixed(1)} s cycle (1 s silence, "${TEXT}" ≈ ${(phrase.length / RATE).toFixed(1)} s of demo speech, silence; activity ${Math.round(ACTIVITY * 100)} %) in 20 ms frames at real-time pace for ${SECONDS} s per level. Random weights: transcripts are random; latency and completion are what count.`,
  `Model-only limit (same run): raw onnxruntime-node, ${turnSeconds.toFixed(1)} s turns back to back, the better of the server's saturated layout and 1 replica × every core: ${limit.replicas} replica(s) × ${limit.threads} thread(s), ${limit.audioPerSecond.toFixed(2)} audio-s/s = ${sessionsLimit.toFixed(1)} sessions at this activity.`,
  `Capacity (largest level with p99 ≤ 1 s, nothing failed): ${capacity} sessions = ${((100 * capacity) / sessionsLimit).toFixed(0)} % of the model-only limit.`,
];

if (values['long-turn']) {
  const longSeconds = Number(values['long-turn']);
  // The phrase again and again with 100 ms gaps (shorter than silence_duration_ms): one turn of about longSeconds.
  const reps = Math.ceil(longSeconds / (phrase.length / RATE + 0.1));
  const long = new Float32Array(reps * (phrase.length + 0.1 * RATE));
  for (let i = 0; i < reps; i++) long.set(phrase, i * (phrase.length + 0.1 * RATE));
  const others = LEVELS.find((l) => l > 1) ?? 5;
  const longCycle = cycleFrames(long, 0.8);
  const { reports, cpu } = await runSessions(
    [
      { sessions: 1, cycle: longCycle },
      { sessions: others, cycle },
    ],
    longSeconds * 2.5,
  );
  const [longReport, otherReport] = reports.map(summarize);
  rows.push(
    '',
    `| long turn | its speech_stopped → completed ms | other sessions | their p50 / p99 ms | failed | server CPU |`,
    '|---|---:|---:|---:|---:|---:|',
    `| ${(long.length / RATE).toFixed(0)} s | ${longReport!.stop.map(ms).join(', ') || '—'} | ${others} | ${pair(otherReport!.stop)} | ${longReport!.failed} / ${otherReport!.failed} | ${cpu.toFixed(2)} |`,
  );
}

await server.stop();
recordSection(`realtime at real size (${values.model})`, [...notes, `Machine: ${os.availableParallelism()} cores.`], rows, !values['no-write']);
process.exit(0);
