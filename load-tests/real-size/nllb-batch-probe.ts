/**
 * `tsx load-tests/real-size/nllb-batch-probe.ts [--batches 1,2,4,10] [--steps 40]`: what one merged-decoder
 * step of the real-size NLLB-600M costs per batch size (raw onnxruntime-node, the server's threads): the
 * measurement behind batching concurrent translations (nllb-batcher.ts). Prints ms per step and per row.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import ort from 'onnxruntime-node';
import { defaultPackDir } from '../../models/real-size/generate.js';
import { serverThreads } from './model-only.js';

const { values } = parseArgs({ options: { batches: { type: 'string', default: '1,2,4,10' }, steps: { type: 'string', default: '40' } } });
const dir = path.join(defaultPackDir(), 'nllb-600m');
const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, number>;
const options: ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: serverThreads('nllb'),
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  extra: { session: { intra_op: { allow_spinning: '0' } } },
};
const encoder = await ort.InferenceSession.create(path.join(dir, 'onnx', 'encoder_model.onnx'), options);
const decoder = await ort.InferenceSession.create(path.join(dir, 'onnx', 'decoder_model_merged.onnx'), options);
const layers = config.decoder_layers!;
const heads = config.decoder_attention_heads!;
const headDim = config.d_model! / heads;
const int64 = (v: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(v, BigInt), dims);
const names = Array.from({ length: layers }, (_, i) =>
  ['decoder', 'encoder'].flatMap((p) => ['key', 'value'].map((kv) => `past_key_values.${i}.${p}.${kv}`)),
).flat();
const SOURCE = 40;
const STEPS = Number(values.steps);
process.stdout.write('| batch | ms per step | ms per row-step |\n|---:|---:|---:|\n');
for (const batch of values.batches.split(',').map(Number)) {
  const ids = Array.from({ length: batch * SOURCE }, (_, i) => 100 + ((i * 7919) % 5000));
  const mask = int64(
    ids.map(() => 1),
    [batch, SOURCE],
  );
  const { last_hidden_state: hidden } = await encoder.run({ input_ids: int64(ids, [batch, SOURCE]), attention_mask: mask });
  const empty = new ort.Tensor('float32', new Float32Array(0), [batch, heads, 0, headDim]);
  const past: Record<string, ort.Tensor> = Object.fromEntries(names.map((n) => [n, empty]));
  let input = Array.from({ length: batch }, () => [2, 256_100]).flat();
  let width = 2;
  let length = 0;
  let t0 = 0;
  for (let step = 0; step <= STEPS; step++) {
    if (step === 1) t0 = performance.now(); // step 0 (no cache) is not a cached step
    const feeds: Record<string, ort.Tensor> = {
      input_ids: int64(input, [batch, width]),
      encoder_attention_mask: mask,
      encoder_hidden_states: hidden!,
      use_cache_branch: new ort.Tensor('bool', Uint8Array.of(length === 0 ? 0 : 1), [1]),
      ...past,
    };
    if (decoder.inputNames.includes('cache_position'))
      feeds.cache_position = int64(
        Array.from({ length: width }, (_, i) => length + i),
        [width],
      );
    const out = await decoder.run(Object.fromEntries(decoder.inputNames.map((n) => [n, feeds[n]!])));
    for (const n of names) if (n.includes('.decoder.') || length === 0) past[n] = out[n.replace('past_key_values', 'present')]!;
    length += width;
    width = 1;
    input = Array.from({ length: batch }, (_, r) => 1000 + r + step);
  }
  const ms = (performance.now() - t0) / STEPS;
  process.stdout.write(`| ${batch} | ${ms.toFixed(1)} | ${(ms / batch).toFixed(1)} |\n`);
}
