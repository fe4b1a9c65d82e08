/**
 * load-tests/realtime: N concurrent OpenAI-Realtime transcription sessions (N = 50, 100, 250, 500, 1000 by
 * default) streaming paced demo speech in 20 ms frames against a Kuma process with the demo models: server
 * CPU, event-loop lag, first-delta latency, end-of-speech (speech_stopped) → completed latency, transcript
 * exactness, lost turns and generator lag. Beside each level, the REST transcription path gets the same
 * audio at the same rate of turns (one upload per client per cycle), for comparison.
 *
 * Run: `npm run bench:realtime [-- --levels 50,500 --seconds 20 --workers 2 --shape ga|beta --client raw|ws|raw,ws --no-write]`.
 * `--client` picks the generator's WebSocket client (session-sockets.ts; raw by default, the cheaper one);
 * a list runs every level once per client, one after the other, to compare the generator's CPU per frame.
 * `--activity 0.4`: the share of each session's time that is speech. Environment: ASR_NICE=n gives the speech
 * model's threads niceness n (to compare with the default), KUMA_BENCH_GC=1 prints the server's GC pauses,
 * KUMA_BENCH_PROF=dir writes CPU profiles of its threads.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { spawnWorker } from '../../src/threads/spawn-worker.js';
import { percentile, recordSection } from '../results.js';
import { startModelServer } from '../model-server.js';
import type { WorkerInput, WorkerReport } from './session-worker.js';
import { CLIENT_KINDS, type ClientKind } from './session-sockets.js';
import { restAtPace } from './rest-baseline.js';

const { values } = parseArgs({
  options: {
    levels: { type: 'string', default: '50,100,250,500,1000' },
    seconds: { type: 'string', default: '20' },
    workers: { type: 'string', default: '1' },
    shape: { type: 'string', default: 'ga' },
    client: { type: 'string', default: 'raw' },
    'no-write': { type: 'boolean', default: false },
    'no-rest': { type: 'boolean', default: false },
    /** Share of each session's time that is speech (see ACTIVITY below). */
    activity: { type: 'string', default: '0.4' },
    /** Another checkout whose server to measure (its code; this checkout's demo model files). */
    'server-dir': { type: 'string' },
  },
});
const LEVELS = values.levels.split(',').map(Number);
const SECONDS = Number(values.seconds);
const WORKERS = Number(values.workers);
const CLIENTS = values.client.split(',') as ClientKind[];
for (const client of CLIENTS) if (!CLIENT_KINDS.includes(client)) throw new Error(`--client: ${client} is not one of ${CLIENT_KINDS.join(', ')}`);
// A phrase Silero keeps as one turn at the default server_vad settings, cycle after cycle (checked): the demo
// voice's synthetic vowels make Silero dip inside some phrases, and a dip longer than silence_duration_ms
// splits a turn in two — on any server_vad — which would measure the demo voice, not the server.
const TEXT = 'n bɛ taa sugu la sini';
const RATE = 24000;
const FRAME = RATE / 50;
const LEAD_SILENCE_S = 1.0;
/**
 * Speech activity of one talker: each session speaks this share of the time, silent the rest. 0.4 by default,
 * about what one side of a two-party call does (ITU-T P.59's artificial conversational speech has each talker
 * active ≈ 38 % of the time); a session is one side of a call or of a voice-agent conversation.
 */
const ACTIVITY = Number(values.activity);
if (!(ACTIVITY > 0 && ACTIVITY <= 0.8)) throw new Error('--activity must be in (0, 0.8]');

// One cycle: silence, the phrase, silence, with the phrase ACTIVITY of the cycle.
const phrase = speakDemo(TEXT, RATE).samples;
const TAIL_SILENCE_S = Math.max(0.8, phrase.length / RATE / ACTIVITY - phrase.length / RATE - LEAD_SILENCE_S);
const cycle = new Float32Array(Math.ceil((LEAD_SILENCE_S * RATE + phrase.length + TAIL_SILENCE_S * RATE) / FRAME) * FRAME);
cycle.set(phrase, LEAD_SILENCE_S * RATE);
const pcm = Buffer.alloc(cycle.length * 2);
cycle.forEach((v, i) => pcm.writeInt16LE(Math.round(Math.max(-1, Math.min(1, v)) * 32767), i * 2));
const frames: string[] = [];
for (let i = 0; i < cycle.length / FRAME; i++) {
  frames.push(JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm.subarray(i * FRAME * 2, (i + 1) * FRAME * 2).toString('base64') }));
}
const cycleSeconds = cycle.length / RATE;
const turnDetection = { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 };
const setup = JSON.stringify(
  values.shape === 'beta'
    ? {
        type: 'transcription_session.update',
        session: { input_audio_format: 'pcm16', input_audio_transcription: { model: 'sunjata-1' }, turn_detection: turnDetection },
      }
    : {
        type: 'session.update',
        session: {
          type: 'transcription',
          audio: { input: { format: { type: 'audio/pcm', rate: RATE }, transcription: { model: 'sunjata-1' }, turn_detection: turnDetection } },
        },
      },
);

process.env.KUMA_REALTIME_MAX_SESSIONS_PER_KEY ??= '0';
const server = await startModelServer(
  [
    {
      id: 'sunjata-1',
      engine: 'ctc-wav2vec2',
      dir: path.resolve('models/demo/ctc-wav2vec2'),
      maxQueue: 512,
      ...(process.env.ASR_NICE ? { niceness: Number(process.env.ASR_NICE) } : {}),
    },
    { id: 'vad', engine: 'silero-vad', dir: '.', maxQueue: 4096 },
  ],
  values['server-dir'],
);
const base = `127.0.0.1:${server.port}/openai/v1`;

function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks of 10 ms
}

/** The server's event-loop delay p99 and max since the previous scrape (prom-client resets it per collect). */
async function loopLag(): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`http://${base.replace('/openai/v1', '')}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^kuma_nodejs_eventloop_lag_${name}_seconds (\\S+)`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { p99: read('p99'), max: read('max') };
}

/** The server's speech_stopped → completed histogram (cumulative bucket counts by upper bound, seconds). */
async function stopToFinalBuckets(): Promise<Map<number, number>> {
  const text = await (await fetch(`http://${base.replace('/openai/v1', '')}/metrics`)).text();
  const buckets = new Map<number, number>();
  for (const m of text.matchAll(/^kuma_realtime_speech_stopped_to_completed_seconds_bucket\{le="([^"]+)"\} (\S+)/gm))
    buckets.set(m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2]));
  return buckets;
}

/** The bucket bound under which p % of the turns between two scrapes fell: "≤ 150" (ms). */
function bucketPercentile(before: Map<number, number>, after: Map<number, number>, p: number): string {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const total = (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
  if (total <= 0) return '—';
  for (const bound of bounds)
    if ((after.get(bound)! - (before.get(bound) ?? 0)) / total >= p / 100) return bound === Infinity ? '> 10 s' : `≤ ${Math.round(bound * 1000)}`;
  return '—';
}

interface LevelResult {
  report: WorkerReport;
  cpu: number;
  lag: { p99: number; max: number };
  seconds: number;
  /** The server's own speech_stopped → completed p50 and p99, as histogram bucket bounds. */
  serverStopToFinal: { p50: string; p99: string };
  /** This process's CPU seconds (the generator: its worker threads, this thread, GC) and frames sent, both over the measured window. */
  generator: { cpu: number; frames: number };
}

async function realtimeLevel(sessions: number, client: ClientKind): Promise<LevelResult> {
  const shares = Array.from({ length: WORKERS }, (_, i) => Math.floor(sessions / WORKERS) + (i < sessions % WORKERS ? 1 : 0)).filter((n) => n > 0);
  const workers = shares.map((n) => {
    const data: WorkerInput = {
      url: `ws://${base}/realtime?intent=transcription`,
      apiKey: server.apiKey,
      sessions: n,
      setup,
      frames,
      speechStartFrame: Math.floor((LEAD_SILENCE_S * RATE) / FRAME),
      text: TEXT,
      staggerMs: cycleSeconds * 1000,
      client,
    };
    return spawnWorker(new URL(`./session-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url), { workerData: data });
  });
  const ask = <T>(worker: (typeof workers)[number], message: string) =>
    new Promise<T>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.postMessage(message);
    });
  const framesBefore = (await Promise.all(workers.map((w) => ask<{ framesSent: number }>(w, 'ready?')))).reduce((sum, r) => sum + r.framesSent, 0);
  const generator0 = process.cpuUsage();
  await loopLag(); // resets the server's delay histogram: what follows is this level's
  const buckets0 = await stopToFinalBuckets();
  const cpu0 = cpuSeconds(server.pid);
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  const cpu = cpuSeconds(server.pid) - cpu0;
  const generatorUsage = process.cpuUsage(generator0);
  const seconds = (performance.now() - t0) / 1000;
  const lag = await loopLag();
  const buckets1 = await stopToFinalBuckets();
  const serverStopToFinal = { p50: bucketPercentile(buckets0, buckets1, 50), p99: bucketPercentile(buckets0, buckets1, 99) };
  const reports = await Promise.all(workers.map((w) => ask<WorkerReport>(w, 'stop')));
  await Promise.all(workers.map((w) => w.terminate()));
  const report = reports.reduce((a, b) => ({
    connected: a.connected + b.connected,
    failedToConnect: a.failedToConnect + b.failedToConnect,
    framesSent: a.framesSent + b.framesSent,
    framesLate: a.framesLate + b.framesLate,
    turns: [...a.turns, ...b.turns],
    failed: Object.fromEntries([...new Set([...Object.keys(a.failed), ...Object.keys(b.failed)])].map((k) => [k, (a.failed[k] ?? 0) + (b.failed[k] ?? 0)])),
    phrasesSent: a.phrasesSent + b.phrasesSent,
    speechStarted: a.speechStarted + b.speechStarted,
    errors: [...a.errors, ...b.errors].slice(0, 20),
    closedEarly: a.closedEarly + b.closedEarly,
    loopDelayP99Ms: Math.max(a.loopDelayP99Ms, b.loopDelayP99Ms),
  }));
  const generator = { cpu: (generatorUsage.user + generatorUsage.system) / 1e6, frames: report.framesSent - framesBefore };
  return { report, cpu, lag, seconds, serverStopToFinal, generator };
}

const fmt = (v: number) => (Number.isFinite(v) ? v.toFixed(v < 10 ? 1 : 0) : '—');
const pcts = (list: number[]) => (list.length ? `${fmt(percentile(list, 50))} / ${fmt(percentile(list, 99))}` : '—');
const rows = [
  '| sessions | client | connected | phrases sent | turns completed | exact | first delta p50 / p99 ms | speech_stopped → completed p50 / p99 ms (client) | same, server histogram p50 / p99 ms | frames sent | frames late (generator) | closed early | server CPU (cores) | generator CPU (cores) | generator µs / frame | server event-loop lag p99 / max ms | generator event-loop lag p99 ms | REST p50 / p99 ms (same audio, same rate) |',
  '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
];
const problems: string[] = [];
for (const sessions of LEVELS) {
  const levelRows: Array<(rest: string) => string> = [];
  for (const client of CLIENTS) {
    const { report, cpu, lag, seconds, generator, serverStopToFinal } = await realtimeLevel(sessions, client);
    const firstDelta = report.turns.flatMap((t) => (t.firstDeltaMs === null ? [] : [t.firstDeltaMs]));
    const stopToFinal = report.turns.flatMap((t) => (t.stopToFinalMs === null ? [] : [t.stopToFinalMs]));
    const exact = report.turns.filter((t) => t.exact).length;
    const perFrameUs = generator.frames > 0 ? (generator.cpu * 1e6) / generator.frames : NaN;
    levelRows.push(
      (rest) =>
        `| ${sessions} | ${client} | ${report.connected} | ${report.phrasesSent} | ${report.turns.length} | ${report.turns.length ? ((100 * exact) / report.turns.length).toFixed(1) : '—'} % | ${pcts(firstDelta)} | ${pcts(stopToFinal)} | ${serverStopToFinal.p50} / ${serverStopToFinal.p99} | ${report.framesSent} | ${report.framesLate} | ${report.closedEarly} | ${(cpu / seconds).toFixed(2)} | ${(generator.cpu / seconds).toFixed(2)} | ${fmt(perFrameUs)} | ${fmt(lag.p99)} / ${fmt(lag.max)} | ${fmt(report.loopDelayP99Ms)} | ${rest} |`,
    );
    const inexact = report.turns
      .filter((t) => !t.exact)
      .slice(0, 4)
      .map((t) => JSON.stringify(t.transcript));
    if (inexact.length) process.stderr.write(`inexact transcripts (first 4): ${inexact.join(', ')}\n`);
    if (report.errors.length) problems.push(`${sessions} sessions (${client}): ${report.errors.slice(0, 5).join('; ')}`);
    process.stderr.write(`${levelRows.at(-1)!('…')}\n`);
  }
  const rest = values['no-rest']
    ? null
    : await restAtPace({
        url: `http://${base}/audio/transcriptions`,
        apiKey: server.apiKey,
        clients: sessions,
        pcm: pcm.subarray(0),
        rate: RATE,
        cycleSeconds,
        seconds: Math.min(SECONDS, 10),
        text: TEXT,
      });
  rows.push(...levelRows.map((row) => row(rest ? `${pcts(rest.latencies)}${rest.failures ? ` (${rest.failures} failed)` : ''}` : '—')));
}
await server.stop();

recordSection(
  'realtime',
  [
    `Sessions: OpenAI Realtime transcription sessions (${values.shape === 'beta' ? 'beta transcription_session.update' : 'GA session.update'}, pcm16 24 kHz, server_vad threshold 0.5, prefix 300 ms, silence 500 ms) over the generator's ${CLIENTS.join(' and ')} WebSocket client (one after the other at each level when two), each streaming a ${cycleSeconds.toFixed(1)} s cycle (${LEAD_SILENCE_S} s silence, "${TEXT}" ≈ ${(phrase.length / RATE).toFixed(1)} s of demo speech, ${TAIL_SILENCE_S.toFixed(1)} s silence: speech ${((100 * phrase.length) / cycle.length).toFixed(0)} % of the time) in 20 ms frames at real-time pace for ${SECONDS} s, starts spread over one cycle; the generator runs in ${WORKERS} worker thread(s) on the same 2 cores.`,
    'Server: its own process, sunjata-1 (demo wav2vec2 CTC) and Silero VAD v5, replicas by cores, per-key session cap off.',
    "first delta = first transcription delta − send time of the phrase's first speech frame; speech_stopped → completed as the client receives them; exact = completed transcript equal to the phrase; frames late = frames the generator sent over 40 ms after due (its own lag); generator CPU = this process (the session workers, the orchestrating thread, GC) over the measured window, per second and per frame sent in it.",
    'REST: the same phrase cycle as one 24 kHz WAV upload per client per cycle (so the same rate of turns), json transcript, latency = upload start → response.',
    ...problems,
  ],
  rows,
  !values['no-write'],
);
process.exit(0);
