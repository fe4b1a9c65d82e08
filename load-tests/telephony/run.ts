/**
 * load-tests/telephony: N simultaneous simulated Twilio calls in voice relay mode (1, 50, 100, 200 by default)
 * against a Kuma process with the demo models, and an echo ConversationRelay app. Each caller speaks a short
 * demo-voice phrase, is silent while the reply plays, and speaks the next. Per turn: the caller's end of speech
 * → the first reply frame (less the app's own time and the end-of-turn silence), the cadence of the reply's
 * frames; per level: server and generator CPU, failures; the server's own histograms beside the client's
 * figures. The 1-call level is the baseline of the run: the other levels are reported as ratios to it.
 *
 * Run: `npm run bench:telephony [-- --calls 1,50,100,200 --seconds 60 --workers 1 --stagger 5 --no-write]`.
 *
 * Bridge mode (`--bridge fr-FR` or `en-US`): the calls are bilingual — the app speaks French (English) and
 * answers every prompt with the same two-sentence reply; Kuma translates the caller's turn for the app and the
 * app's reply for the caller. With `--pack real-size` the server runs the real-size pack (wav2vec2-base,
 * NLLB-600M, MMS-TTS VITS; npm run models:real-size) and the run ends with the model-only floor of both waits
 * (bridge-model-only.ts). The callers still speak the demo voice's phrases (a real speech detector hears them).
 * `npm run bench:telephony -- --bridge fr-FR --pack real-size --calls 1,5,10 --seconds 90`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { spawnWorker } from '../../src/threads/spawn-worker.js';
import { startModelServer } from '../model-server.js';
import { recordSection } from '../results.js';
import { defaultPackDir } from '../../models/real-size/generate.js';
import { bridgeModelOnly, type BridgeModelOnly } from './bridge-model-only.js';
import { BRIDGE_TABLE_HEAD, bridgeRow } from './bridge-table.js';
import type { WorkerInput, WorkerReport } from './call-worker.js';
import { callerScript, SCRIPT_SHAPE } from './caller-script.js';
import { levelRow, TABLE_HEAD, type LevelFigures } from './level-table.js';
import { scrapeHistogram, type Buckets } from './server-histograms.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '1,50,100,200' },
    seconds: { type: 'string', default: '60' },
    workers: { type: 'string', default: '1' },
    /** Call starts are spread over this many seconds. */
    stagger: { type: 'string', default: '5' },
    'no-write': { type: 'boolean', default: false },
    /** Bridge mode: the app's language tag (fr-FR, en-US). */
    bridge: { type: 'string', default: '' },
    /** The server's models: the demo pack, or the real-size pack (random weights in the real architectures). */
    pack: { type: 'string', default: 'demo' },
    /** The caller's silence after each phrase, beyond the phrase's length (s); bridge mode waits longer. */
    tail: { type: 'string' },
    /**
     * Real size: random weights never pick `</s>`, so the translation model is held to this many tokens per
     * source token (maxLengthA, maxLengthB 0): 1.05 is FLORES-200's median French/Bambara token ratio with the
     * pack's tokenizer, so it writes as much as a real translation does.
     */
    'mt-length-ratio': { type: 'string', default: '1.05' },
  },
});
const BRIDGE = values.bridge;
const REAL_SIZE = values.pack === 'real-size';
if (!['demo', 'real-size'].includes(values.pack)) throw new Error('--pack is demo or real-size');
if (BRIDGE && !/^(fr|en)(-[A-Z]{2})?$/.test(BRIDGE)) throw new Error('--bridge is fr-FR or en-US');
const APP_LANGUAGE = BRIDGE.startsWith('en') ? 'eng_Latn' : 'fra_Latn';
/** What the bridge-mode app answers, in two sentences: the first is what the caller waits for. */
const REPLY = BRIDGE.startsWith('en')
  ? 'All right, I understood you. The market opens tomorrow at eight.'
  : "D'accord, je vous ai bien compris. Le marché ouvre demain à huit heures.";
const TAIL_MS = values.tail === undefined ? (BRIDGE ? 14_000 : undefined) : Number(values.tail) * 1000;
const MT_BOUND = { maxLengthA: Number(values['mt-length-ratio']), maxLengthB: 0 };
const LEVELS = values.calls.split(',').map(Number);
const SECONDS = Number(values.seconds);
const WORKERS = Number(values.workers);
const STAGGER_MS = Number(values.stagger) * 1000;
if (LEVELS.some((n) => !(n >= 1)) || !(SECONDS > 0) || !(WORKERS >= 1)) throw new Error('--calls, --seconds and --workers must be positive');
if (LEVELS[0] !== 1) process.stderr.write('note: the first level is the baseline of the ratios; --calls usually starts with 1\n');

/**
 * Phrases the demo voice says and the demo ASR hears back exactly, each one turn at the default server_vad
 * (a dip in the demo voice longer than silence_duration_ms would split a phrase into two turns).
 */
const PHRASES = ['n bɛ taa sugu la sini', 'an bɛ taa dugu la sini sɔgɔma', 'n bɛ taa sugu la'];
/** The call's end-of-turn silence: Kuma's calls use server_vad's default silence_duration_ms. */
const SILENCE_MS = 500;

process.env.KUMA_OUTBOUND_ALLOW = '127.0.0.1'; // the echo app listens on loopback
process.env.KUMA_TELEPHONY_MAX_CALLS_PER_ACCOUNT = '0';
process.env.KUMA_REALTIME_MAX_SESSIONS_PER_KEY ??= '0';
const demoModels = [
  { id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: path.resolve('models/demo/ctc-wav2vec2'), maxQueue: 1024 },
  { id: 'jifili-1', engine: 'vits-hf', dir: path.resolve('models/demo/vits-hf'), maxQueue: 1024 },
  { id: 'banjugu-1', engine: 'nllb', dir: path.resolve('models/demo/nllb'), maxQueue: 1024 },
  { id: 'vad', engine: 'silero-vad', dir: '.', maxQueue: 4096 },
];
const pack = defaultPackDir();
const realDirs = { asr: path.join(pack, 'wav2vec2-base'), mt: path.join(pack, 'nllb-600m'), tts: path.join(pack, 'mms-tts-vits') };
for (const dir of REAL_SIZE ? Object.values(realDirs) : []) if (!fs.existsSync(dir)) throw new Error(`${dir} is not in the pack: npm run models:real-size`);
const realModels = [
  { id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: realDirs.asr, maxQueue: 1024 },
  { id: 'jifili-1', engine: 'vits-hf', dir: realDirs.tts, maxQueue: 1024 },
  { id: 'banjugu-1', engine: 'nllb', dir: realDirs.mt, maxQueue: 1024, options: MT_BOUND },
  { id: 'vad', engine: 'silero-vad', dir: '.', maxQueue: 4096 },
];
// The callers speak the demo voice's phrases: a real-size voice has random weights, and says nothing.
const voice = await startModelServer(demoModels);

/** The phrases as the server's own voice says them, μ-law 8 kHz (once, before any call). */
async function speech(text: string): Promise<Uint8Array> {
  const res = await fetch(`http://127.0.0.1:${voice.port}/openai/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${voice.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'jifili-1', input: text, voice: 'alloy', response_format: 'ulaw' }),
  });
  if (res.status !== 200) throw new Error(`speech ${res.status}: ${await res.text()}`);
  return new Uint8Array(await res.arrayBuffer());
}
const { script, phraseStarts, phrases } = callerScript(await Promise.all(PHRASES.map(async (text) => ({ text, ulaw: await speech(text) }))), TAIL_MS);
if (REAL_SIZE) await voice.stop();
const server = REAL_SIZE ? await startModelServer(realModels) : voice;
const baseUrl = `http://127.0.0.1:${server.port}`;

function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks of 10 ms
}

const REPLY_LATENCY = 'kuma_telephony_reply_latency_seconds';
const FRAME_LATENESS = 'kuma_telephony_frame_lateness_seconds';
const scrape = async (): Promise<[Buckets, Buckets]> => Promise.all([scrapeHistogram(baseUrl, REPLY_LATENCY), scrapeHistogram(baseUrl, FRAME_LATENESS)]);

async function level(calls: number): Promise<LevelFigures> {
  const shares = Array.from({ length: WORKERS }, (_, i) => Math.floor(calls / WORKERS) + (i < calls % WORKERS ? 1 : 0)).filter((n) => n > 0);
  let firstCall = 0;
  const workers = shares.map((n) => {
    const data: WorkerInput = {
      baseUrl,
      apiKey: server.apiKey,
      calls: n,
      firstCall,
      script,
      phraseStarts,
      staggerMs: STAGGER_MS,
      drainMs: BRIDGE ? 30_000 : 10_000,
      ...(BRIDGE ? { bridge: { language: BRIDGE, reply: REPLY } } : {}),
    };
    firstCall += n;
    return spawnWorker(new URL(`./call-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url), { workerData: data });
  });
  const ask = <T>(worker: (typeof workers)[number], message: string) =>
    new Promise<T>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.postMessage(message);
    });
  await Promise.all(workers.map((w) => ask(w, 'ready?')));
  const [latency0, lateness0] = await scrape();
  const generator0 = process.cpuUsage();
  const cpu0 = cpuSeconds(server.pid);
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  const serverCpu = cpuSeconds(server.pid) - cpu0;
  const generatorUsage = process.cpuUsage(generator0);
  const seconds = (performance.now() - t0) / 1000;
  const reports = await Promise.all(workers.map((w) => ask<WorkerReport>(w, 'stop')));
  await Promise.all(workers.map((w) => w.terminate()));
  // After the drain: the window's last turns are in the server's histograms too.
  const [latency1, lateness1] = await scrape();
  return {
    calls,
    reports,
    seconds,
    serverCores: serverCpu / seconds,
    generatorCores: (generatorUsage.user + generatorUsage.system) / 1e6 / seconds,
    server: { replyLatency: [latency0, latency1], frameLateness: [lateness0, lateness1] },
  };
}

const rows = [...(BRIDGE ? BRIDGE_TABLE_HEAD : TABLE_HEAD)];
const problems: string[] = [];
let baseline: LevelFigures | null = null;
const heard = new Set<string>();
for (const calls of LEVELS) {
  const figures = await level(calls);
  baseline ??= figures;
  const { row, notes } = BRIDGE ? bridgeRow(figures, SILENCE_MS) : levelRow(figures, baseline, phrases, SILENCE_MS);
  for (const report of figures.reports) for (const text of report.originals) if (heard.size < 6) heard.add(text);
  rows.push(row);
  problems.push(...notes);
  process.stderr.write(`${row}\n${notes.map((n) => `  ${n}\n`).join('')}`);
  await new Promise((resolve) => setTimeout(resolve, 2000)); // the last calls' records are written before the next level
}
await server.stop();

// The model-only floor, with the server gone (the same cores, the same files, the server's threads per model).
let floor: BridgeModelOnly | null = null;
if (BRIDGE && REAL_SIZE) {
  const [firstSentence] = REPLY.split(/(?<=[.!?])\s+/);
  floor = await bridgeModelOnly(
    { ...realDirs, ...MT_BOUND },
    phrases.map((p) => p.speechMs / 1000),
    [...heard].filter(Boolean).slice(0, 4),
    APP_LANGUAGE,
    firstSentence!,
  );
  process.stderr.write(`model only: ${JSON.stringify(floor)}\n`);
}

const modelsLine = REAL_SIZE
  ? `Server: its own process, the real-size pack (random weights in the real architectures; npm run models:real-size): sunjata-1 wav2vec2-base (94 M, ctc-wav2vec2), banjugu-1 NLLB-600M (615 M; output bound ${MT_BOUND.maxLengthA} × source tokens: random weights never pick </s>, and 1.05 is FLORES-200's median French/Bambara token ratio with the pack's tokenizer, so it writes what a real translation writes), jifili-1 MMS-TTS VITS (36 M), Silero VAD; calls use server_vad threshold 0.5, prefix 300 ms, silence_duration_ms 500; per-account call cap off.`
  : 'Server: its own process, demo sunjata-1 (wav2vec2 CTC), jifili-1 (VITS), banjugu-1 (NLLB), Silero VAD; calls use server_vad threshold 0.5, prefix 300 ms, silence_duration_ms 500; per-account call cap off.';
const callsLine = `Calls: simulated Twilio Media Streams (bidirectional, Twilio's message order and string fields; μ-law 8 kHz in 160-byte frames every 20 ms) in voice relay mode, to ${BRIDGE ? `a ${APP_LANGUAGE} ConversationRelay app (call token language ${BRIDGE}: Kuma's bilingual bridge) that answers every final prompt with "${REPLY}" word by word` : 'an echo ConversationRelay app (each final prompt answered word by word with the same words, last: true on the last)'} in the generator's worker thread(s); ${WORKERS} worker(s) on the same 2 cores, at niceness ${process.env.KUMA_BENCH_GENERATOR_NICE ?? 10} (they stand in for carriers on other machines); call starts spread over ${STAGGER_MS / 1000} s, then a measured window of ${SECONDS} s at the full count.`;
const callerLine = `Caller: ${SCRIPT_SHAPE.replace('2500 ms', `${TAIL_MS ?? 2500} ms`)}; phrases (the demo jifili-1 voice, μ-law): ${phrases.map((p) => `"${p.text}" ${(p.speechMs / 1000).toFixed(1)} s`).join(', ')}; marks echoed when the audio before them has played in a model of Twilio's playout buffer.`;

if (BRIDGE) {
  recordSection(
    REAL_SIZE ? 'telephony-bridge-real-size' : 'telephony-bridge',
    [
      callsLine,
      callerLine,
      modelsLine,
      `end of speech → prompt = the caller's last speech frame sent → the app's prompt received, less the ${SILENCE_MS} ms end-of-turn silence (recognition, then the translation into the app's language). app text → first reply frame = the app's first text token sent → the caller's first reply frame received (the first sentence's translation into Bambara, its first phrase's synthesis, the pacer's start). Both on one clock (the worker thread's). Server reply latency: kuma_telephony_reply_latency_seconds (speech_stopped → first reply frame, less the app's time). Frame lateness: kuma_telephony_frame_lateness_seconds, every outbound frame's send time − due time; frames > 20 ms late counted from its buckets.`,
      ...(floor
        ? [
            `Model only (same run, raw onnxruntime-node on the same files with the server's threads, medians): end of speech → prompt ${floor.promptMs.toFixed(0)} ms = ASR of the phrase ${floor.asrMs.toFixed(0)} ms + translation of what was heard ${floor.promptTranslationMs.toFixed(0)} ms; app text → first reply frame ${floor.replyMs.toFixed(0)} ms = translation of "${REPLY.split(/(?<=[.!?])\s+/)[0]}" ${floor.replyTranslationMs.toFixed(0)} ms + its first phrase's synthesis ${floor.firstPhraseMs.toFixed(0)} ms.`,
          ]
        : []),
      `Heard (the caller's words as the ASR wrote them, as the app got them in prompt.original; first 4): ${[...heard]
        .slice(0, 4)
        .map((h) => JSON.stringify(h))
        .join(', ')}.`,
      "Failures: calls not connected or closed other than by the caller's hang-up; phrases with no prompt; prompts with no reply; prompts no phrase explains; protocol errors; clears (the caller waits for the reply, so a clear is a reply still playing when the caller spoke again).",
      ...problems,
    ],
    rows,
    !values['no-write'],
  );
  process.exit(0);
}

recordSection(
  'telephony',
  [
    callsLine,
    callerLine,
    modelsLine,
    `reply latency (client) = the caller's last speech frame sent → the first reply frame received, less the app's own time (prompt received → first text sent) and less the ${SILENCE_MS} ms end-of-turn silence; the server histogram kuma_telephony_reply_latency_seconds measures speech_stopped → first reply frame sent, less the app's time as the server sees it (prompt sent → first text received). Turns whose speech ended in the window.`,
    "frame cadence deviation (client): per reply, each frame's arrival − 20 ms × its index, less the smallest such delay of that reply (delay variation against the best-aligned 20 ms cadence; the frame the pacer sends ahead as the carrier's cushion left out); a gap in the reply counts on every frame after it. playout gaps: times the modelled playout buffer ran dry mid-reply (synthesis behind the playback: the caller hears a gap). pacing jitter: the same deviation within each run of frames between gaps (the pacer restarts a stream that ran dry). Server: kuma_telephony_frame_lateness_seconds (send time − due time per frame), the figure the pacing target is checked on: it is Kuma's own pacing, while every client figure also holds the generator's lag on the same 2 cores (its loop lag column).",
    "Failures: calls not connected or closed other than by the caller's hang-up; phrases with no prompt; prompts with no reply; prompts no phrase explains (a phrase split in two turns); protocol errors (frames that are not Twilio's outbound media/mark/clear of this stream, media not of 160 bytes); clears (barge-ins: the caller waits for the reply, so any is a reply that came too late). reply length off = reply audio outside 0.7–1.5 × the phrase's own speech length (an exact prompt's echo says the same words).",
    "Ratios: each level's figure ÷ the first level's (the in-run baseline). Targets on 2 cores: ≥ 200 calls with reply latency p99 ≤ 400 ms and pacing jitter p99 ≤ 20 ms; met/MISSED is marked at ≥ 200 calls (ok/over below), latency also requires no failure.",
    ...problems,
  ],
  rows,
  !values['no-write'],
);
process.exit(0);
