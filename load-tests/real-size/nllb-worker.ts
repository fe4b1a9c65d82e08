/**
 * A worker thread running raw onnxruntime-node on an NLLB export (optimum layout: onnx/encoder_model.onnx and
 * onnx/decoder_model_merged.onnx): the "model-only" side of bench:translate:real-size. One job translates one
 * sentence, given as source token ids, greedily: the encoder once, the merged decoder's step 0 on
 * `[decoder_start, target]` without cache, then one token per step over the KV cache, until `</s>` or
 * `maxNew` tokens — the loop the NLLB protocol prescribes (MODELS.md), with nothing of Kuma around it.
 * Jobs are posted as { id, ids, target } and answered { id, ms, tokens }; jobs that arrive while others run
 * run concurrently on the same sessions (onnxruntime-node runs them on libuv's pool), as a plain server
 * without batching would serve concurrent callers.
 */
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import ort from 'onnxruntime-node';

export interface NllbWorkerData {
  dir: string;
  intraOpThreads: number;
  layers: number;
  heads: number;
  headDim: number;
  decoderStart: number;
  eos: number;
  maxNew: number;
  /** The runner's output-length bound: at most ⌈a × source tokens⌉ + b new tokens (nllb-runner.ts). */
  maxLengthA: number;
  maxLengthB: number;
}

export interface NllbJob {
  id: number;
  ids: number[];
  target: number;
}

const data = workerData as NllbWorkerData;
const options: ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: data.intraOpThreads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  extra: { session: { intra_op: { allow_spinning: '0' } } },
};
const encoder = await ort.InferenceSession.create(path.join(data.dir, 'onnx', 'encoder_model.onnx'), options);
const decoder = await ort.InferenceSession.create(path.join(data.dir, 'onnx', 'decoder_model_merged.onnx'), options);

const int64 = (values: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), dims);
const pastNames = Array.from({ length: data.layers }, (_, i) =>
  ['decoder', 'encoder'].flatMap((part) => ['key', 'value'].map((kv) => `past_key_values.${i}.${part}.${kv}`)),
).flat();

function argmaxLast(logits: ort.Tensor): number {
  const [, steps, vocab] = logits.dims as [number, number, number];
  const values = logits.data as Float32Array;
  const at = (steps - 1) * vocab;
  let best = 0;
  for (let v = 1; v < vocab; v++) if (values[at + v]! > values[at + best]!) best = v;
  return best;
}

/** The tokens written (`</s>` left out); their count with `</s>` is the number of decoder steps. */
async function translate(job: NllbJob): Promise<number[]> {
  const mask = int64(
    job.ids.map(() => 1),
    [1, job.ids.length],
  );
  const { last_hidden_state: hidden } = await encoder.run({ input_ids: int64(job.ids, [1, job.ids.length]), attention_mask: mask });
  const empty = new ort.Tensor('float32', new Float32Array(0), [1, data.heads, 0, data.headDim]);
  const past: Record<string, ort.Tensor> = Object.fromEntries(pastNames.map((n) => [n, empty]));
  let input = [data.decoderStart, job.target];
  let length = 0;
  let tokens = 0;
  const written: number[] = [];
  const bound = Math.min(data.maxNew, Math.ceil(data.maxLengthA * job.ids.length) + data.maxLengthB);
  for (;;) {
    const feeds: Record<string, ort.Tensor> = {
      input_ids: int64(input, [1, input.length]),
      encoder_attention_mask: mask,
      encoder_hidden_states: hidden!,
      use_cache_branch: new ort.Tensor('bool', Uint8Array.of(length === 0 ? 0 : 1), [1]),
      ...past,
    };
    if (decoder.inputNames.includes('cache_position'))
      feeds.cache_position = int64(
        input.map((_, i) => length + i),
        [input.length],
      );
    const out = await decoder.run(Object.fromEntries(decoder.inputNames.map((n) => [n, feeds[n]!])));
    for (const name of pastNames) if (name.includes('.decoder.') || length === 0) past[name] = out[name.replace('past_key_values', 'present')]!;
    length += input.length;
    const next = argmaxLast(out.logits!);
    tokens++;
    if (next !== data.eos) written.push(next);
    if (next === data.eos || tokens >= bound) return written;
    input = [next];
  }
}

parentPort!.on('message', async (job: NllbJob) => {
  const t0 = performance.now();
  const written = await translate(job);
  const ms = performance.now() - t0;
  // tokens: decoder steps (the written tokens, and `</s>` when it was picked).
  parentPort!.postMessage({
    id: job.id,
    ms,
    tokens: written.length + (written.length < Math.min(data.maxNew, Math.ceil(data.maxLengthA * job.ids.length) + data.maxLengthB) ? 1 : 0),
    written,
  });
});
parentPort!.postMessage({ ready: true });
