/**
 * load-tests/engines/log-mel.ts: cost of Whisper's log-mel features for one 30 s window (80 mels) —
 * the straightforward reference, the candidate fast implementations (log-mel-candidates.ts), the one Kuma
 * ships (WhisperFeatureExtractor: folded DFT in an onnxruntime graph) and `@huggingface/transformers`'
 * WhisperFeatureExtractor (transformers.js, plain JS), in one process, one thread each, calls interleaved.
 * Also reports each one's max abs difference from the reference and from transformers.js.
 * Appends the table to load-tests/RESULTS.md. Run: `npm run bench:log-mel [-- --repeats 10 --warmups 2 --no-write]`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { WhisperFeatureExtractor as HfWhisperFeatureExtractor, env } from '@huggingface/transformers';
import { referenceLogMel, WhisperFeatureExtractor } from '../../src/engines/asr/whisper-features.js';
import { appendResults, environmentLines } from '../results.js';
import { convDftGraph, graphCandidate, jsFftLogMel, stftOpGraph } from './log-mel-candidates.js';
import { demoSpeech, interleaved, load, ms, time } from './measure.js';

const { values } = parseArgs({
  options: { repeats: { type: 'string', default: '10' }, warmups: { type: 'string', default: '2' }, 'no-write': { type: 'boolean', default: false } },
});
const plan = { repeats: Number(values.repeats), warmups: Number(values.warmups) };
if (!Number.isInteger(plan.repeats) || plan.repeats < 3) throw new Error('--repeats must be an integer ≥ 3 (medians of at least 3 runs)');
if (!Number.isInteger(plan.warmups) || plan.warmups < 1) throw new Error('--warmups must be an integer ≥ 1');

const N_MELS = 80;

/** transformers.js from a preprocessor_config.json written here (Whisper's, 80 mels): nothing is downloaded. */
async function loadTransformersJs(): Promise<{ extractor: HfWhisperFeatureExtractor; close(): void }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-log-mel-'));
  fs.mkdirSync(path.join(root, 'whisper'));
  const config = {
    feature_extractor_type: 'WhisperFeatureExtractor',
    feature_size: N_MELS,
    sampling_rate: 16000,
    hop_length: 160,
    chunk_length: 30,
    n_fft: 400,
    n_samples: 480000,
    nb_max_frames: 3000,
    padding_side: 'right',
    padding_value: 0.0,
    return_attention_mask: false,
  };
  fs.writeFileSync(path.join(root, 'whisper', 'preprocessor_config.json'), JSON.stringify(config, null, 2));
  env.localModelPath = root;
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  const extractor = (await HfWhisperFeatureExtractor.from_pretrained('whisper', { local_files_only: true })) as HfWhisperFeatureExtractor;
  return { extractor, close: () => fs.rmSync(root, { recursive: true, force: true }) };
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`feature lengths differ: ${a.length} vs ${b.length}`);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
}

interface Side {
  name: string;
  how: string;
  compute(samples: Float32Array): Promise<Float32Array>;
}

async function main(): Promise<void> {
  const started = performance.now();
  const loadBefore = os.loadavg()[0]!;
  const speech = demoSpeech(30);
  const hf = await loadTransformersJs();
  const kuma = await WhisperFeatureExtractor.create({ nMels: N_MELS, intraOpThreads: 1, interOpThreads: 1 });
  const stft = await graphCandidate(stftOpGraph(N_MELS));
  const conv = await graphCandidate(convDftGraph(N_MELS));
  const sides: Side[] = [
    { name: 'reference', how: 'direct DFT, float64, plain JS (referenceLogMel)', compute: async (x) => referenceLogMel(x, N_MELS) },
    { name: 'candidate: JS FFT', how: 'mixed-radix (5·5·2·4) 200-point complex FFT + real split, float64, JS', compute: async (x) => jsFftLogMel(x, N_MELS) },
    { name: 'candidate: ONNX STFT op', how: 'onnxruntime STFT (opset 17) + MatMul mel, 1 thread', compute: (x) => stft.compute(x) },
    { name: 'candidate: ONNX Conv DFT', how: 'Conv1D, 402 windowed cos/sin kernels × 400 taps, stride 160, 1 thread', compute: (x) => conv.compute(x) },
    {
      name: 'Kuma WhisperFeatureExtractor',
      how: 'JS framing + symmetric fold, two MatMul DFTs (200 and 199 taps) in onnxruntime, 1 thread',
      compute: (x) => kuma.compute(x),
    },
    {
      name: 'transformers.js WhisperFeatureExtractor',
      how: 'plain JS (spectrogram() in utils/audio.js)',
      compute: async (x) => (await hf.extractor(x)).input_features.data as Float32Array,
    },
  ];
  try {
    const outputs: Float32Array[] = [];
    for (const side of sides) outputs.push(await side.compute(speech.samples));
    const reference = outputs[0]!;
    const hfOut = outputs[sides.length - 1]!;
    const timings = await interleaved(
      plan,
      sides.map((side) => () => time(async () => void (await side.compute(speech.samples)))),
    );
    const hfMs = timings[sides.length - 1]!.totalMs;
    const rows = sides.map((side, i) => {
      const t = timings[i]!;
      const cells = [
        side.name,
        side.how,
        ms(t.totalMs),
        ms(t.cpuMs),
        (hfMs / t.totalMs).toFixed(2),
        maxAbsDiff(outputs[i]!, reference).toExponential(1),
        maxAbsDiff(outputs[i]!, hfOut).toExponential(1),
      ];
      return `| ${cells.join(' | ')} |`;
    });
    const version = (pkg: string) =>
      (JSON.parse(fs.readFileSync(new URL(`../../node_modules/${pkg}/package.json`, import.meta.url), 'utf8')) as { version: string }).version;
    const busy = load.cpuMs / load.wallMs;
    const notes = [
      `Input: ${speech.seconds.toFixed(1)} s of demo speech (models/generator/demo-voice.ts), 16 kHz, one 30 s window → [${N_MELS} × 3000] features (MODELS.md "Whisper specifics").`,
      `Each figure is the median of ${plan.repeats} timed windows per implementation after ${plan.warmups} untimed warm-up calls; the implementations alternate call by call. CPU ms is this process's user + system time per window. Ratio = transformers.js wall ms / that row's wall ms (above 1: faster than transformers.js).`,
      `Max abs diff: over all ${N_MELS * 3000} feature values, against the float64 reference and against transformers.js ${version('@huggingface/transformers')} (features are (log10 + 4) / 4, so 1e-4 is 4e-4 in log10 units).`,
      `onnxruntime-node ${version('onnxruntime-node')}, 1 intra-op + 1 inter-op thread, graph optimisation 'all'.`,
      `Machine load: 1-min load average ${loadBefore.toFixed(1)} before, ${os.loadavg()[0]!.toFixed(1)} after, on ${os.cpus().length} cores; this process had the CPU for ${(busy * 100).toFixed(0)}% of the measured wall time${busy < 0.9 ? ' — other processes competed for the CPU, so wall times are noisy (CPU ms is the steadier figure)' : ''}. Whole run ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    ];
    const section = [
      `## log-mel — ${new Date().toISOString()}`,
      '',
      ...environmentLines(),
      '',
      '| implementation | how | wall ms / window | CPU ms / window | ratio t.js / this | max abs diff vs reference | max abs diff vs transformers.js |',
      '|---|---|---:|---:|---:|---:|---:|',
      ...rows,
      '',
      ...notes.map((n) => `- ${n}`),
      '',
    ].join('\n');
    process.stdout.write(`\n${section}\n`);
    if (!values['no-write']) appendResults(section);
  } finally {
    await Promise.all([kuma.close(), stft.close(), conv.close()]);
    hf.close();
  }
}

await main();
