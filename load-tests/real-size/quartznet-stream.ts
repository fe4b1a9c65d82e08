/**
 * `npx tsx load-tests/real-size/quartznet-stream.ts [--model DIR] [--write]`: stateful streaming of the
 * real-size QuartzNet 15×5 (from `npm run models:real-size`; random weights, the real graph) through the CTC
 * runner in this thread, one onnxruntime thread. Not part of `npm test` (the model is 75 MB and a 40 s run
 * takes seconds).
 *
 * 1. Exactness: turns of 3 s to 75 s (QuartzNet reads ±40 s) split into random pieces and ended at a random
 *    point give the frames of one whole-turn run, frame for frame.
 * 2. Cost, per turn length (CPU time, p50 of 5): the whole-turn run (what a final re-decode costs), the
 *    mid-turn pieces of 0.5 s, and the final step after the turn was fed up to 1 s (the holdback) before its end —
 *    the final computes that last second and every layer's frames still pending up to the end (the end's
 *    lookahead, about half the receptive field per layer), so for turns shorter than ≈ 40 s it costs about
 *    a whole-turn run.
 * The pack's model_config says normalize per_feature in packs made before it was changed to NA: the runner
 * is given normalize NA either way (streaming needs it; ctc-stream.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { defaultPackDir } from '../../models/real-size/generate.js';
import { createCtcRunner } from '../../src/engines/asr/ctc-runner.js';
import type { RunnerContext } from '../../src/engines/runner.js';
import { percentile, recordSection } from '../results.js';

const { values } = parseArgs({ options: { model: { type: 'string' }, write: { type: 'boolean', default: false } } });
const dir = values.model ?? path.join(defaultPackDir(), 'quartznet15x5');
if (!fs.existsSync(path.join(dir, 'model.onnx'))) throw new Error(`${dir}/model.onnx is missing: run npm run models:real-size first`);
const RATE = 16_000;

const runner = await createCtcRunner({
  entry: { id: 'quartznet', aliases: [], engine: 'ctc-nemo', dir, replicas: 1, maxQueue: 1, options: { normalize: 'NA', warmupSeconds: 1 } },
  dir,
  intraOpThreads: 1,
  interOpThreads: 1,
});
if (runner.info().stateful !== true) throw new Error(`QuartzNet does not stream statefully: ${String(runner.info().statefulRefusal)}`);
const lookahead = runner.info().statefulLookaheadSeconds;
const ctx: RunnerContext = { signal: new AbortController().signal, checkpoint: async () => {} };

let seed = 20261128;
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;

function audio(seconds: number): Float32Array {
  const out = new Float32Array(Math.round(seconds * RATE));
  let phase = 0;
  for (let i = 0; i < out.length; i++) {
    phase += (2 * Math.PI * (250 + 150 * Math.sin(i / 7000))) / RATE;
    out[i] = (Math.sin(i / 4000) > -0.2 ? 0.3 * Math.sin(phase) : 0) + (random() - 0.5) * 0.02;
  }
  return out;
}

interface Step {
  ids: Int32Array;
  firstFrame: number;
  state: unknown;
}
const whole = async (samples: Float32Array) => Array.from(((await runner.call('frames', { samples, skip: 0, take: null }, ctx)) as { ids: Int32Array }).ids);
const step = (samples: Float32Array, state: unknown, final: boolean) => runner.call('stream', { samples, state, final }, ctx) as Promise<Step>;

// 1. Exactness over random splits.
const checks: string[] = [];
for (const seconds of [3, 10, 40, 75]) {
  for (let trial = 0; trial < 2; trial++) {
    const samples = audio(seconds);
    const expected = await whole(samples);
    const endAt = Math.floor(random() * samples.length);
    const ids: number[] = [];
    let state: unknown = null;
    for (let at = 0; ;) {
      const size = Math.max(1, Math.round((0.02 + random() * 3) * RATE));
      const final = at + size >= endAt;
      const to = final ? samples.length : at + size;
      const out = await step(samples.slice(at, to), state, final);
      if (out.firstFrame !== ids.length) throw new Error(`frames out of order at ${seconds} s`);
      ids.push(...out.ids);
      state = out.state;
      at = to;
      if (final) break;
    }
    const mismatched = expected.filter((id, i) => ids[i] !== id).length + Math.abs(expected.length - ids.length);
    checks.push(`${seconds} s (ended at ${(endAt / RATE).toFixed(1)} s): ${ids.length} frames, ${mismatched} differ`);
    console.log(checks.at(-1));
    if (mismatched) throw new Error(`stream frames differ from the whole run at ${seconds} s`);
  }
}

// 2. Cost: whole-turn run, mid-turn 0.5 s pieces, and the final step after a 1 s holdback. CPU time of this
// thread (onnxruntime runs on it with one intra-op thread), less disturbed than wall time on a shared host.
const PIECE = RATE / 2;
const HOLDBACK = RATE;
const REPEATS = 5;
async function cpu(work: () => Promise<unknown>): Promise<{ cpu: number; wall: number }> {
  const c = process.cpuUsage();
  const t = performance.now();
  await work();
  const used = process.cpuUsage(c);
  return { cpu: (used.user + used.system) / 1000, wall: performance.now() - t };
}
const rows = [
  `| turn | whole-turn run, CPU ms (wall) | mid-turn 0.5 s piece, CPU ms | all mid-turn pieces, CPU ms | final step, CPU ms (wall) | final / whole | pieces + final / whole |`,
  '|---:|---:|---:|---:|---:|---:|---:|',
];
for (const seconds of [3, 10, 40, 80]) {
  const samples = audio(seconds);
  await whole(samples); // grows the arena for this length once
  const wholeRuns: { cpu: number; wall: number }[] = [];
  const finals: { cpu: number; wall: number }[] = [];
  const turns: number[] = [];
  const pieces: number[] = [];
  for (let run = 0; run < REPEATS; run++) {
    wholeRuns.push(await cpu(() => whole(samples)));
    let state: unknown = null;
    let at = 0;
    let turn = 0;
    for (; at + PIECE <= samples.length - HOLDBACK; at += PIECE) {
      const piece = await cpu(async () => (state = (await step(samples.slice(at, at + PIECE), state, false)).state));
      pieces.push(piece.cpu);
      turn += piece.cpu;
    }
    turns.push(turn);
    finals.push(await cpu(() => step(samples.slice(at), state, true)));
  }
  const w = percentile(
    wholeRuns.map((r) => r.cpu),
    50,
  );
  const f = percentile(
    finals.map((r) => r.cpu),
    50,
  );
  const t = percentile(turns, 50);
  const p = pieces.length ? pieces.reduce((a, b) => a + b, 0) / pieces.length : NaN;
  const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : '—');
  rows.push(
    `| ${seconds} s | ${ms(w)} (${ms(
      percentile(
        wholeRuns.map((r) => r.wall),
        50,
      ),
    )}) | ${ms(p)} | ${ms(t)} | ${ms(f)} (${ms(
      percentile(
        finals.map((r) => r.wall),
        50,
      ),
    )}) | ${(f / w).toFixed(2)} | ${((t + f) / w).toFixed(2)} |`,
  );
  console.log(rows.at(-1));
}
await runner.close();
recordSection(
  'QuartzNet 15×5 stateful streaming',
  [
    `Model: ${path.basename(dir)} from the real-size pack (random weights), CTC runner in-thread, 1 onnxruntime thread, normalize NA; lookahead ${String(lookahead)} s (no frame comes out sooner).`,
    `Exactness (random splits, random end of the mid-turn pieces): ${checks.join('; ')}.`,
    `Cost (p50 of ${REPEATS}; CPU time of the thread running onnxruntime, wall in brackets): the turn fed in 0.5 s pieces up to 1 s before its end, then the final step (that 1 s and every layer’s pending frames).`,
  ],
  rows,
  values.write,
);
process.exit(0);
