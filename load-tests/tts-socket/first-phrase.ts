/**
 * The model-only time of a text's first phrase: raw onnxruntime-node on the voice's model file, with one
 * intra-op thread (a TTS replica's), fed the token ids that Kuma's phrase plan (phrase-plan.ts, over the
 * voice's alphabet) and the layout's tokenizer give the first phrase, at the layout's default scales. Only
 * the planning and tokenizing are Kuma's (microseconds); the run is the model alone. Median of 9 runs
 * after a warm-up (a random-weight VITS draws its durations, so runs vary).
 */
import ort from 'onnxruntime-node';
import { planPhrases } from '../../src/engines/tts/phrase-plan.js';
import { loadVitsLayout } from '../../src/engines/tts/vits-layouts.js';
import { alphabetOf } from '../../src/engines/tts/vits-runner.js';
import { percentile } from '../results.js';

export async function firstPhraseModelOnlyMs(engine: string, dir: string, text: string): Promise<number> {
  const layout = loadVitsLayout(engine, dir, {});
  const first = planPhrases(text, new Set(alphabetOf(layout)))[0]!;
  const { ids } = layout.tokenize(first.spoken, { boundaryAfter: first.boundaryAfter });
  const session = await ort.InferenceSession.create(layout.modelFile, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  });
  const binding = layout.bind(session.inputNames);
  const types = Object.fromEntries(session.inputMetadata.map((m) => [m.name, m.isTensor ? m.type : '']));
  const int = (name: string, values: number[], dims: number[]) =>
    types[name] === 'int32' ? new ort.Tensor('int32', Int32Array.from(values), dims) : new ort.Tensor('int64', BigInt64Array.from(values, BigInt), dims);
  const float = (values: number[]) => new ort.Tensor('float32', Float32Array.from(values), [values.length]);
  const { noiseScale, lengthScale, noiseScaleW } = layout.defaults;
  const feeds: Record<string, ort.Tensor> = { [binding.ids]: int(binding.ids, ids, [1, ids.length]) };
  if (binding.length?.kind === 'mask')
    feeds[binding.length.name] = int(
      binding.length.name,
      ids.map(() => 1),
      [1, ids.length],
    );
  if (binding.length?.kind === 'lengths') feeds[binding.length.name] = int(binding.length.name, [ids.length], [1]);
  if (binding.scales?.kind === 'separate')
    Object.assign(feeds, {
      [binding.scales.noise]: float([noiseScale]),
      [binding.scales.length]: float([lengthScale]),
      [binding.scales.noiseW]: float([noiseScaleW]),
    });
  if (binding.scales?.kind === 'packed') feeds[binding.scales.name] = float([noiseScale, lengthScale, noiseScaleW]);
  if (binding.speaker) feeds[binding.speaker] = int(binding.speaker, [0], [1]);
  await session.run(feeds);
  const times: number[] = [];
  for (let i = 0; i < 9; i++) {
    const t0 = performance.now();
    await session.run(feeds);
    times.push(performance.now() - t0);
  }
  await session.release();
  return percentile(times, 50);
}
