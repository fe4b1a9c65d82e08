/**
 * `npm run bench:translate:real-size -- [--levels 1,10] [--requests 4,1] [--variant ''] [--no-write]`: banjugu-1
 * at NLLB-600M size (the real-size pack's nllb-600m: random weights in the real architecture and optimum
 * layout), per-sentence latency through POST /openai/v1/chat/completions at each level of concurrent
 * clients, beside raw onnxruntime-node running the same encoder and merged-decoder greedy loop
 * (nllb-worker.ts) on the same sentences, with the same threads, at the same concurrency, in the same run.
 *
 * Sentences: FLORES-200 Bambara (shared/data/flores200-bam-fra) that Kuma's splitter keeps as one sentence,
 * translated to French. Random weights rarely pick `</s>`, so most sentences run to banjugu-1's output-length bound
 * (⌈3 × source tokens⌉ + 10, at most max_length − 2 = 198): both sides generate the same tokens (greedy over the same weights), and the table says how many.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { defaultPackDir } from '../../models/real-size/generate.js';
import { splitSentences } from '../../src/engines/mt/sentence-splitter.js';
import { TextTokenizer } from '../../src/engines/text/tokenizer.js';
import { spawnWorker } from '../../src/threads/spawn-worker.js';
import { startModelServer } from '../model-server.js';
import { percentile, recordSection } from '../results.js';
import type { NllbJob, NllbWorkerData } from './nllb-worker.js';
import { serverThreads } from './model-only.js';

const { values } = parseArgs({
  options: {
    levels: { type: 'string', default: '1,10' },
    /** Requests per client, per level (one number: every level). */
    requests: { type: 'string', default: '4,1' },
    variant: { type: 'string', default: '' },
    'no-write': { type: 'boolean', default: false },
  },
});
const dir = path.join(defaultPackDir(), 'nllb-600m');
if (!fs.existsSync(path.join(dir, '.complete.json'))) throw new Error(`${dir} is not in the pack: npm run models:real-size -- --only nllb-600m`);
const LEVELS = values.levels.split(',').map(Number);
const REQUESTS_BY_LEVEL = values.requests.split(',').map(Number);
let REQUESTS = REQUESTS_BY_LEVEL[0]!;
const threads = serverThreads('nllb');
const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, number>;
const tokenizer = TextTokenizer.fromDirectory(dir);
const languageId = (code: string) => tokenizer.addedTokens().find((t) => t.content === code)!.id;

const DATA = path.resolve(import.meta.dirname, '../../../shared/data/flores200-bam-fra/flores.bam_Latn.txt');
const sentences = fs
  .readFileSync(DATA, 'utf8')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line && splitSentences(line).length === 1)
  .filter((line) => {
    const n = tokenizer.encode(line).length;
    return n >= 20 && n <= 60;
  });

/** The i-th request's sentence (the same list for both sides). */
const sentence = (i: number) => sentences[i % sentences.length]!;
const sourceIds = (text: string) => [languageId('bam_Latn'), ...tokenizer.encode(text), config.eos_token_id!];

interface Sample {
  ms: number;
  tokens: number;
  sourceTokens: number;
}

/** Runs `clients` loops of REQUESTS requests each; request k of client c uses sentence c·REQUESTS + k. */
async function level(clients: number, one: (i: number) => Promise<Sample>): Promise<Sample[]> {
  const samples: Sample[] = [];
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let k = 0; k < REQUESTS; k++) samples.push(await one(c * REQUESTS + k));
    }),
  );
  return samples;
}

const workerData: NllbWorkerData = {
  dir,
  intraOpThreads: threads,
  layers: config.decoder_layers!,
  heads: config.decoder_attention_heads!,
  headDim: config.d_model! / config.decoder_attention_heads!,
  decoderStart: config.decoder_start_token_id!,
  eos: config.eos_token_id!,
  maxNew: (config.max_length ?? 200) - 2,
  // banjugu-1's defaults (nllb-runner.ts): both sides stop at the same per-sentence bound.
  maxLengthA: 3,
  maxLengthB: 10,
};

async function modelOnly(clients: number): Promise<Sample[]> {
  const worker = spawnWorker(new URL('./nllb-worker.ts', import.meta.url), { workerData });
  await new Promise((resolve, reject) => (worker.once('message', resolve), worker.once('error', reject)));
  let next = 0;
  const pending = new Map<number, (r: { ms: number; tokens: number }) => void>();
  worker.on('message', (m: { id: number; ms: number; tokens: number }) => pending.get(m.id)?.(m));
  const run = (ids: number[]) =>
    new Promise<{ ms: number; tokens: number }>((resolve) => {
      const job: NllbJob = { id: next++, ids, target: languageId('fra_Latn') };
      pending.set(job.id, resolve);
      worker.postMessage(job);
    });
  await run(sourceIds(sentence(0))); // warm
  const samples = await level(clients, async (i) => {
    const ids = sourceIds(sentence(i));
    const t0 = performance.now();
    const r = await run(ids);
    return { ms: performance.now() - t0, tokens: r.tokens, sourceTokens: ids.length };
  });
  await worker.terminate();
  return samples;
}

const entry = { id: 'banjugu-1', engine: 'nllb', dir, maxQueue: 256, ...(values.variant ? { options: { variant: values.variant } } : {}) };
async function kuma(clients: number): Promise<Sample[]> {
  const server = await startModelServer([entry]);
  const post = async (text: string) => {
    const res = await fetch(`http://127.0.0.1:${server.port}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'banjugu-1',
        messages: [{ role: 'user', content: text }],
        djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
      }),
    });
    if (res.status !== 200) throw new Error(`translation ${res.status}: ${await res.text()}`);
    return (await res.json()) as { choices: Array<{ message: { content: string } }> };
  };
  try {
    await post(sentence(0)); // warm
    return await level(clients, async (i) => {
      const text = sentence(i);
      const t0 = performance.now();
      const answer = await post(text);
      if (typeof answer.choices[0]?.message.content !== 'string') throw new Error('no translation in the answer');
      // banjugu-1 bills characters: the generated token count is the model-only side's (same greedy tokens).
      return { ms: performance.now() - t0, tokens: 0, sourceTokens: sourceIds(text).length };
    });
  } finally {
    await server.stop();
  }
}

const fmt = (s: Sample[]) =>
  `${percentile(
    s.map((x) => x.ms),
    50,
  ).toFixed(0)} / ${percentile(
    s.map((x) => x.ms),
    99,
  ).toFixed(0)}`;
const mean = (s: Sample[], f: (x: Sample) => number) => (s.reduce((a, x) => a + f(x), 0) / s.length).toFixed(0);
const rows = [
  '| concurrent | requests | model only p50 / p99 ms | Kuma p50 / p99 ms | p50 ratio | p99 ratio | source / generated tokens, mean (model only) | Kuma sentences/s |',
  '|---:|---:|---:|---:|---:|---:|---:|---:|',
];
for (const [l, clients] of LEVELS.entries()) {
  REQUESTS = REQUESTS_BY_LEVEL[Math.min(l, REQUESTS_BY_LEVEL.length - 1)]!;
  const model = await modelOnly(clients);
  const t0 = performance.now();
  const served = await kuma(clients);
  const wall = (performance.now() - t0) / 1000;
  const ratio = (p: number) =>
    (
      percentile(
        served.map((x) => x.ms),
        p,
      ) /
      percentile(
        model.map((x) => x.ms),
        p,
      )
    ).toFixed(2);
  const row = `| ${clients} | ${served.length} | ${fmt(model)} | ${fmt(served)} | ${ratio(50)} | ${ratio(99)} | ${mean(served, (x) => x.sourceTokens)} / ${mean(model, (x) => x.tokens)} | ${(served.length / wall).toFixed(2)} |`;
  rows.push(row);
  process.stderr.write(`${row}\n`);
}
recordSection(
  'translation at real size (nllb-600m)',
  [
    `Model: nllb-600m (\`nllb\`, optimum layout, merged decoder${values.variant ? `, variant ${values.variant}` : ', fp32'}) from the real-size pack, served as banjugu-1 with the server's default replicas and ${threads} intra-op thread(s); the model-only side: raw onnxruntime-node, same files and threads, greedy loop over the KV cache.`,
    `Sentences: FLORES-200 Bambara → French, 20–60 source tokens, one sentence each; ${values.requests} per client (by level) after a warm-up; latency per request (Kuma: HTTP request to answer).`,
    'Random weights: generated tokens run to the output-length bound (⌈3 × source tokens⌉ + 10, at most max_length − 2) unless `</s>` is picked; both sides generate the same count (shown).',
  ],
  rows,
  !values['no-write'],
);
process.exit(0);
