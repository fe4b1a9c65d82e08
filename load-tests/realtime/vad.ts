/**
 * bench:realtime:vad — what voice-activity detection costs per realtime session: N channels fed paced audio
 * (20 ms frames in real time, demo speech and silence like one side of a conversation) through the real
 * VadScheduler and the real `silero-vad` engine (a worker thread), for each N in the levels and each mode:
 *
 *   - batched:        the default (one job per tick, every channel's windows in one batched model run per step,
 *                     energy gate at −60 dBFS);
 *   - batched-nogate: the same without the energy gate (what the gate saves);
 *   - unbatched:      the same scheduler and gate, but one model run per window (maxRows 1): the baseline;
 *   - batched-8k:     the default, with Silero in its 8 kHz mode (KUMA_VAD_RATE=8000: the worker decimates).
 *
 * Per level and mode: CPU seconds (this whole process: main thread + worker) per second of audio scored,
 * ticks/s, model windows run vs gated, score delay p50/p99 (a window's last sample pushed → its
 * probability delivered), event-loop delay p99, and the share of windows scored by the end of the level (a
 * mode that cannot keep up falls behind). Compare the modes within one run (ratios); the machine's other load
 * moves the absolute figures.
 *
 *   npm run bench:realtime:vad -- [--levels 50,100,250,500,1000] [--seconds 10] [--modes batched,unbatched] [--no-write]
 *
 * batched vs batched-8k (2026-11-24, 2 shared cores at load ≈ 12, direction only; RESULTS.md): CPU s / audio s
 * 0.00197 vs 0.00185 at 250, 0.00179 vs 0.00150 at 500 (16 kHz fell behind: 90 % scored, p99 delay 1.7 s;
 * 8 kHz kept up, 0.64 s), at 1000 both fell behind. The model share alone: ≈ 60 vs 40–48 µs per window.
 */
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { ModelEngine } from '../../src/engines/runtime/model-engine.js';
import { VAD_WINDOW } from '../../src/engines/vad/silero-batch.js';
import { VadScheduler, type VadSchedulerOptions } from '../../src/realtime/vad/vad-scheduler.js';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { percentile, recordSection } from '../results.js';

const { values } = parseArgs({
  options: {
    levels: { type: 'string', default: '50,100,250,500,1000' },
    seconds: { type: 'string', default: '10' },
    modes: { type: 'string', default: 'batched,batched-nogate,unbatched,batched-8k' },
    'no-write': { type: 'boolean', default: false },
  },
});
const LEVELS = values.levels.split(',').map(Number);
const SECONDS = Number(values.seconds);
const MODES: Record<string, VadSchedulerOptions> = {
  batched: {},
  'batched-nogate': { energyFloorDbfs: null },
  unbatched: { maxRows: 1 },
  'batched-8k': { rate: 8000 },
};
const modes = values.modes.split(',').filter((m) => m in MODES);
const RATE = 16000;
const FRAME = 320; // 20 ms, as a realtime client sends

/** One side of a conversation, looped: demo phrases with 0.8–2 s pauses (speech ≈ 50 % of the time). */
function conversationTrack(): Float32Array {
  const phrases = ['i ni ce', 'a ka kɛnɛ wa', 'n bɛ taa sugu la', 'sugu ka di', 'an bɛ taa'];
  const pauses = [1.2, 0.8, 2.0, 1.5, 1.0];
  const parts = phrases.flatMap((p, i) => [speakDemo(p, RATE).samples, new Float32Array(Math.round(pauses[i]! * RATE))]);
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), (at += p.length));
  return out;
}

interface LevelResult {
  cpuPerAudioSecond: number;
  ticksPerSecond: number;
  modelWindows: number;
  gatedWindows: number;
  delayP50: number;
  delayP99: number;
  loopP99: number;
  scoredShare: number;
}

async function runLevel(engine: ModelEngine, track: Float32Array, n: number, options: VadSchedulerOptions): Promise<LevelResult> {
  const scheduler = new VadScheduler(engine, options);
  const frames = Math.floor((SECONDS * RATE) / FRAME);
  const windowsPerChannel = Math.floor((frames * FRAME) / VAD_WINDOW);
  const completedAt = Array.from({ length: n }, () => new Float64Array(windowsPerChannel));
  const delays: number[] = [];
  let scored = 0;
  const channels = Array.from({ length: n }, (_, c) => {
    const channel = scheduler.open(
      (first, probabilities) => {
        const now = performance.now();
        for (let i = 0; i < probabilities.length; i++) delays.push(now - completedAt[c]![first + i]!);
        scored += probabilities.length;
      },
      (err) => {
        throw err;
      },
    );
    // Each channel starts somewhere else in the conversation, so speech and pauses do not line up.
    return { channel, offset: Math.floor((c * 7919 * FRAME) % (track.length - FRAME)), pushed: 0 };
  });
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const due = Math.min(frames, Math.floor((performance.now() - t0) / 20) + 1);
      for (; sent < due; sent++) {
        for (const ch of channels) {
          const start = (ch.offset + sent * FRAME) % (track.length - FRAME);
          ch.channel.push(track.subarray(start, start + FRAME));
          ch.pushed += FRAME;
        }
        // Windows completed by this frame (the same for every channel: they push in step).
        const now = performance.now();
        const complete = Math.floor(((sent + 1) * FRAME) / VAD_WINDOW);
        const before = Math.floor((sent * FRAME) / VAD_WINDOW);
        for (let w = before; w < complete; w++) for (const times of completedAt) times[w] = now;
      }
      if (sent >= frames) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
  // Give the last tick a moment, then read the figures: a mode that fell behind shows it in scoredShare.
  await new Promise((r) => setTimeout(r, 200));
  const cpu = process.cpuUsage(cpu0);
  const wall = (performance.now() - t0) / 1000;
  loop.disable();
  const stats = scheduler.stats();
  for (const { channel } of channels) channel.close();
  await scheduler.close();
  return {
    cpuPerAudioSecond: (cpu.user + cpu.system) / 1e6 / ((scored * VAD_WINDOW) / RATE),
    ticksPerSecond: stats.ticks / wall,
    modelWindows: stats.modelWindows,
    gatedWindows: stats.gatedWindows,
    delayP50: delays.length ? percentile(delays, 50) : NaN,
    delayP99: delays.length ? percentile(delays, 99) : NaN,
    loopP99: loop.percentile(99) / 1e6,
    scoredShare: scored / (n * windowsPerChannel),
  };
}

const engine = new ModelEngine(
  { id: 'vad', aliases: [], engine: 'silero-vad', dir: '.', absoluteDir: path.resolve('models'), maxQueue: 16, options: {} },
  { intraOpThreads: 1, interOpThreads: 1 },
);
await engine.start();
const track = conversationTrack();
const rows = [
  '| N | mode | CPU s / audio s | ticks/s | model windows | gated windows | score delay p50 / p99 (ms) | event-loop p99 (ms) | scored by the end |',
  '|---|---|---|---|---|---|---|---|---|',
];
for (const n of LEVELS) {
  for (const mode of modes) {
    const r = await runLevel(engine, track, n, MODES[mode]!);
    const row = `| ${n} | ${mode} | ${r.cpuPerAudioSecond.toFixed(5)} | ${r.ticksPerSecond.toFixed(1)} | ${r.modelWindows} | ${r.gatedWindows} | ${r.delayP50.toFixed(1)} / ${r.delayP99.toFixed(1)} | ${r.loopP99.toFixed(1)} | ${(r.scoredShare * 100).toFixed(1)} % |`;
    rows.push(row);
    process.stdout.write(`${row}\n`);
  }
}
await engine.close();

recordSection(
  'realtime VAD (bench:realtime:vad)',
  [
    `${SECONDS} s per level and mode; each channel pushes a 20 ms frame (320 samples at 16 kHz) every 20 ms of wall time, all channels in step, from a looped conversation track (5 demo phrases with 0.8–2 s pauses, digital silence), each at its own offset.`,
    'One `silero-vad` replica (worker thread, 1 intra-op thread); the scheduler ticks at most every 32 ms with one job in flight. Modes: batched = default; batched-nogate = no energy gate; unbatched = one model run per window (maxRows 1), same ticks and gate; batched-8k = default with Silero at 8 kHz (decimated in the worker).',
    'CPU s / audio s: process CPU (main thread + worker) over the audio scored; divide 1 by it for the channels one core carries. Score delay: last sample of a window pushed → its probability delivered. "scored by the end": windows delivered 200 ms after the last push, over windows pushed (below 100 % = the mode fell behind).',
  ],
  rows,
  !values['no-write'],
);
