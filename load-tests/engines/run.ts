/**
 * load-tests/engines: speed of Kuma's model runners on the demo model pack — real-time factor and latency
 * (ASR: first segment and total for ~10 s and ~30 s utterances; TTS: first chunk and total for a
 * ~200-character text; MT: ms per call for 1 and 16 sentences, greedy and beam 4; Silero VAD) — beside
 * `@huggingface/transformers` running the same ONNX files in the same process, where it supports the
 * layout. One thread for every onnxruntime session on both sides; everything runs sequentially; both sides
 * are warmed on each input, outputs are compared, then medians of interleaved repetitions are reported.
 * Appends the table to load-tests/RESULTS.md. Run: `npm run bench:engines [-- --repeats 7 --warmups 3 --no-write]`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_DEMO_DIR, ensureDemoPack } from '../../models/generator/generate-demo-pack.js';
import { ModelEntrySchema, type EngineType } from '../../src/engines/manifest.js';
import type { Runner, RunnerFactory } from '../../src/engines/runner.js';
import { createCtcRunner } from '../../src/engines/asr/ctc-runner.js';
import { createVitsRunner } from '../../src/engines/tts/vits-runner.js';
import { createNllbRunner } from '../../src/engines/mt/nllb-runner.js';
import { createSileroRunner } from '../../src/engines/vad/silero-runner.js';
import { appendResults, environmentLines } from '../results.js';
import { buildMirror, loadAsr, loadTranslation, loadTts } from './hf-mirror.js';
import { TTS_TEXT, demoSpeech, load, ms, ratio, type Plan, type Row } from './measure.js';
import { benchAsr, benchMt, benchTts, benchVad, type Speech } from './scenarios.js';

const { values } = parseArgs({
  options: { repeats: { type: 'string', default: '7' }, warmups: { type: 'string', default: '3' }, 'no-write': { type: 'boolean', default: false } },
});
const plan: Plan = { repeats: Number(values.repeats), warmups: Number(values.warmups) };
if (!Number.isInteger(plan.repeats) || plan.repeats < 3) throw new Error('--repeats must be an integer ≥ 3 (medians of at least 3 runs)');
if (!Number.isInteger(plan.warmups) || plan.warmups < 0) throw new Error('--warmups must be an integer ≥ 0');

async function loadKuma(factory: RunnerFactory, engine: EngineType, name: string): Promise<Runner> {
  const dir = path.join(DEFAULT_DEMO_DIR, name);
  const runner = await factory({ entry: ModelEntrySchema.parse({ id: name || engine, engine, dir }), dir, intraOpThreads: 1, interOpThreads: 1 });
  await runner.warmup();
  return runner;
}

const HEADER = [
  '| runner / layout | scenario | Kuma | Kuma first ms | Kuma total ms | transformers.js | t.js first ms | t.js total ms | ratio t.js/Kuma | outputs | notes |',
  '|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|',
];

function line(row: Row): string {
  const t = row.transformers;
  const cells = [
    row.runner,
    row.scenario,
    row.kuma.rate,
    ms(row.kuma.firstMs),
    ms(row.kuma.totalMs),
    t?.rate ?? '—',
    ms(t?.firstMs),
    t ? ms(t.totalMs) : '—',
    ratio(row),
    row.outputs,
    row.notes.join('; '),
  ];
  return `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
}

const rows: Row[] = [];
function add(row: Row): void {
  rows.push(row);
  process.stdout.write(`${line(row)}\n`);
}

async function main(): Promise<void> {
  const started = performance.now();
  const loadBefore = os.loadavg()[0]!;
  await ensureDemoPack();
  const speeches: Speech[] = [10, 30].map((target) => ({ label: `~${target} s utterance`, ...demoSpeech(target) }));
  const mirror = buildMirror(DEFAULT_DEMO_DIR);
  process.stdout.write(`${HEADER.join('\n')}\n`);
  try {
    for (const name of ['ctc-wav2vec2', 'ctc-nemo'] as const) {
      const runner = await loadKuma(createCtcRunner, name, name);
      const hf = name === 'ctc-wav2vec2' ? await loadAsr(name) : undefined;
      for (const speech of speeches) add(await benchAsr(name, runner, hf, speech, plan));
      await runner.close();
    }
    for (const name of ['vits-hf', 'vits-sherpa', 'vits-piper'] as const) {
      const runner = await loadKuma(createVitsRunner, name, name);
      const hf = name === 'vits-hf' ? await loadTts(name) : undefined;
      add(await benchTts(name, runner, hf, TTS_TEXT, plan));
      await runner.close();
    }
    for (const name of ['nllb', 'nllb-unigram']) {
      const runner = await loadKuma(createNllbRunner, 'nllb', name);
      const hf = await loadTranslation(name);
      for (const row of await benchMt(name, runner, hf, plan)) add(row);
      await runner.close();
    }
    const vad = await loadKuma(createSileroRunner, 'silero-vad', ''); // the model ships in @ricky0123/vad-web;
    add(await benchVad(vad, speeches.at(-1)!, plan));
    await vad.close();
  } finally {
    mirror.close();
  }

  // Read from node_modules: transformers.js does not export its package.json.
  const version = (pkg: string) =>
    (JSON.parse(fs.readFileSync(new URL(`../../node_modules/${pkg}/package.json`, import.meta.url), 'utf8')) as { version: string }).version;
  const busy = load.cpuMs / load.wallMs;
  const disagreements = rows.filter((r) => r.outputs.startsWith('DIFFERENT'));
  const notes = [
    `Demo model pack (models/demo, tiny generated models with the real export layouts): the figures measure each runner's own overhead around very small graphs, not real-model inference; compare the ratios, not the absolute times.`,
    `Kuma: the runners called in-process as their worker calls them (checkpoints yield to the event loop). transformers.js ${version('@huggingface/transformers')}: its pipelines (automatic-speech-recognition, text-to-speech, translation) on a temporary mirror of the same files (symlinks; written there: ${mirror.written.join(', ')}; see hf-mirror.ts). Both on onnxruntime-node ${version('onnxruntime-node')}, fp32, 1 intra-op + 1 inter-op thread, graph optimisation 'all', in one process, one after the other.`,
    `Each figure is the median of ${plan.repeats} timed repetitions per side, after one output-comparing call and ${plan.warmups} more untimed warm-up calls per side on the same input; the two sides alternate call by call. RTF = compute seconds / audio seconds (lower is faster); ratio = transformers.js total time / Kuma total time (above 1: Kuma faster).`,
    `TTS: transformers.js synthesizes the phrases Kuma's chunker made, one call each, so both sides produce the same audio; its "first" is the end of its first phrase.`,
    `Output disagreements: ${disagreements.length ? disagreements.map((r) => `${r.runner} ${r.scenario}: ${r.outputs}`).join(' / ') : 'none'}.`,
    `Machine load: 1-min load average ${loadBefore.toFixed(1)} before, ${os.loadavg()[0]!.toFixed(1)} after, on ${os.cpus().length} cores; this process had the CPU for ${(busy * 100).toFixed(0)}% of the measured wall time${busy < 0.9 ? ' — other processes competed for the CPU, so the times are noisy' : ''}. Whole run ${((performance.now() - started) / 1000).toFixed(0)} s.`,
  ];
  const section = [
    '## engines — ' + new Date().toISOString(),
    '',
    ...environmentLines(),
    '',
    ...HEADER,
    ...rows.map(line),
    '',
    ...notes.map((n) => `- ${n}`),
    '',
  ].join('\n');
  process.stdout.write(`\n${section}\n`);
  if (!values['no-write']) appendResults(section);
}

await main();
