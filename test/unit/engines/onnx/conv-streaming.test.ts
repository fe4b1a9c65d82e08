/**
 * The conv streaming transform (src/engines/onnx/conv-streaming.ts), run by onnxruntime in this thread:
 * for random inputs (up to 40 s of features, well past the models' receptive fields) split at random points,
 * the step graph's frames over all steps — the last one final — are the frames of one run of the original
 * graph over the whole input: the same argmax class in every frame, the same log-probabilities to float
 * rounding. Checked on reduced-width QuartzNets (the real graph shape: masked input, stride-2 C1, residual
 * blocks with kernels 33–75, dilation-2 C2; pad_to-like zero tails) and on the demo NeMo model (a Where mask
 * and an AveragePool that excludes its end padding). Graphs with other ops on the time axis are refused.
 */
import fs from 'node:fs';
import fc from 'fast-check';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../../../src/engines/onnx/graph-builder.js';
import { convStreamGraph, STREAM_FINAL, STREAM_POSITION, type ConvStreamGraph } from '../../../../src/engines/onnx/conv-streaming.js';
import { reducedQuartzNet } from '../asr/helpers/reduced-quartznet.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 8);
const MELS = 64;
const IO = { audio: 'audio_signal', length: 'length', output: 'logprobs' };
const OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1 };
const int64 = (v: number, dims: number[] = [1]) => new ort.Tensor('int64', BigInt64Array.from([BigInt(v)]), dims);

interface Pair {
  whole: ort.InferenceSession;
  step: ort.InferenceSession;
  graph: ConvStreamGraph;
}

async function pair(bytes: Uint8Array): Promise<Pair> {
  const graph = convStreamGraph(bytes, IO);
  if ('unsupported' in graph) throw new Error(`not streamable: ${graph.unsupported}`);
  return { whole: await ort.InferenceSession.create(bytes, OPTIONS), step: await ort.InferenceSession.create(graph.bytes, OPTIONS), graph };
}

/** Features [MELS, frames] whose last `zeros` frames are zero (NeMo's pad_to frames), the rest in ±8. */
function features(frames: number, zeros: number, seed: number): Float32Array {
  const data = new Float32Array(MELS * frames);
  let x = seed;
  for (let m = 0; m < MELS; m++) {
    for (let t = 0; t < frames - zeros; t++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      data[m * frames + t] = Math.sin(t / (3 + m)) * 4 + (x / 2147483648 - 0.5) * 8 - 2;
    }
  }
  return data;
}

async function wholeRun(p: Pair, data: Float32Array, frames: number, valid: number): Promise<ort.Tensor> {
  const out = await p.whole.run({ audio_signal: new ort.Tensor('float32', data, [1, MELS, frames]), length: int64(valid) });
  return out.logprobs!;
}

/**
 * Runs the step graph over `data` in pieces of `sizes` (cycled); the piece that reaches the valid frames' end
 * is final and takes the padding frames too (the end, hence `length`, is known only then).
 */
async function steppedRun(p: Pair, data: Float32Array, frames: number, valid: number, sizes: number[]): Promise<{ values: number[]; vocab: number }> {
  let caches: ort.Tensor[] = p.graph.caches.map((c) => new ort.Tensor('float32', new Float32Array(c.dims.reduce((a, b) => a * b, 1)), c.dims));
  const values: number[] = [];
  let vocab = 0;
  for (let at = 0, i = 0; at < frames; i++) {
    const final = at + sizes[i % sizes.length]! >= valid;
    const n = final ? frames - at : sizes[i % sizes.length]!;
    const chunk = new Float32Array(MELS * n);
    for (let m = 0; m < MELS; m++) chunk.set(data.subarray(m * frames + at, m * frames + at + n), m * n);
    const feeds: Record<string, ort.Tensor> = {
      audio_signal: new ort.Tensor('float32', chunk, [1, MELS, n]),
      length: int64(final ? valid : 2 ** 40),
      [STREAM_POSITION]: int64(at, []),
      [STREAM_FINAL]: int64(final ? 1 : 0),
    };
    p.graph.caches.forEach((c, k) => (feeds[c.input] = caches[k]!));
    const out = await p.step.run(feeds);
    values.push(...(out.logprobs!.data as Float32Array));
    vocab = out.logprobs!.dims[2]!;
    caches = p.graph.caches.map((c) => out[c.output]!);
    at += n;
  }
  return { values, vocab };
}

function argmax(values: ArrayLike<number>, vocab: number): number[] {
  const ids: number[] = [];
  for (let row = 0; row < values.length; row += vocab) {
    let best = 0;
    for (let k = 1; k < vocab; k++) if (values[row + k]! > values[row + best]!) best = k;
    ids.push(best);
  }
  return ids;
}

const splits = fc.array(fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 9, max: 400 }), fc.constantFrom(50, 100, 3000)), {
  minLength: 1,
  maxLength: 8,
});
// Up to 4000 feature frames (40 s): QuartzNet-shaped models here see ±7 s, the real one ±40 s.
const frameCounts = fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 41, max: 1500 }), fc.integer({ min: 1501, max: 4000 }));

async function checkEqual(p: Pair, frames: number, zeros: number, seed: number, sizes: number[]): Promise<void> {
  const data = features(frames, zeros, seed);
  const whole = await wholeRun(p, data, frames, frames - zeros);
  const stepped = await steppedRun(p, data, frames, frames - zeros, sizes);
  const expected = whole.data as Float32Array;
  expect(stepped.values.length).toBe(expected.length);
  expect(argmax(stepped.values, stepped.vocab)).toEqual(argmax(expected, stepped.vocab));
  let worst = 0;
  for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(stepped.values[i]! - expected[i]!) / (1 + Math.abs(expected[i]!)));
  expect(worst).toBeLessThan(1e-4);
}

describe('conv streaming step graphs', () => {
  const models = [
    ['reduced QuartzNet (12 channels, 2 sub-blocks)', () => reducedQuartzNet({ seed: 1, channels: 12, repeat: 2 })],
    ['reduced QuartzNet (8 channels, 1 sub-block)', () => reducedQuartzNet({ seed: 2, channels: 8, repeat: 1 })],
    ['the demo NeMo model', () => new Uint8Array(fs.readFileSync('models/demo/ctc-nemo/model.onnx'))],
  ] as const;
  for (const [name, build] of models) {
    it(`${name}: steps over any split, then the final one, give the whole run's frames`, async () => {
      const p = await pair(build());
      await fc.assert(
        fc.asyncProperty(frameCounts, fc.integer({ min: 0, max: 15 }), fc.integer({ min: 1, max: 1e9 }), splits, async (frames, zeros, seed, sizes) => {
          await checkEqual(p, frames, Math.min(zeros, frames - 1), seed, sizes);
        }),
        { numRuns: RUNS, seed: 20261128 },
      );
    }, 120_000);
  }

  it('carries one cache per conv with temporal extent and per input of a residual add, and knows its lookahead', async () => {
    const graph = convStreamGraph(reducedQuartzNet({ channels: 8, repeat: 2 }), IO);
    if ('unsupported' in graph) throw new Error(graph.unsupported);
    expect(graph.lookahead).toBe(16 + 2 * 2 * (16 + 19 + 25 + 31 + 37) + 2 * 86);
    // C1, 5 blocks × 2 depthwise convs, C2: 12 conv caches (pads 16…43, 86 frames to start); 5 adds × 2 inputs.
    expect(graph.caches.map((c) => c.dims[2])).toEqual([
      16,
      ...[16, 16, 19, 19, 25, 25, 31, 31, 37, 37].flatMap((pad, i) => (i % 2 ? [pad, 0, 0] : [pad])),
      86,
    ]);
  });

  /** A graph `audio_signal` → body → `logprobs` [B, T, V] to check the refusals. */
  function graphWith(body: (g: GraphBuilder, x: string) => string): Uint8Array {
    const g = new GraphBuilder('refused');
    const x = g.input('audio_signal', 'float', [1, MELS, 'T']);
    g.input('length', 'int64', [1]);
    g.op('LogSoftmax', [g.op('Transpose', [body(g, x)], { perm: { ints: [0, 2, 1] } })], { axis: { i: -1 } }, 'logprobs');
    g.output('logprobs', 'float', [1, 'T', MELS]);
    return g.toBytes({ opset: 14 });
  }

  it('refuses graphs with other operators on the time axis, and says which', () => {
    const refusal = (bytes: Uint8Array) => {
      const graph = convStreamGraph(bytes, IO);
      return 'unsupported' in graph ? graph.unsupported : 'streamable';
    };
    // Self-attention: scores between every pair of time steps.
    expect(
      refusal(
        graphWith((g, x) =>
          g.op('MatMul', [
            g.op('Softmax', [g.op('MatMul', [g.op('Transpose', [x], { perm: { ints: [0, 2, 1] } }), x])], { axis: { i: -1 } }),
            g.op('Transpose', [x], { perm: { ints: [0, 2, 1] } }),
          ]),
        ),
      ),
    ).toBe('MatMul of two temporal values');
    // Utterance statistics.
    expect(refusal(graphWith((g, x) => g.op('Sub', [x, g.op('ReduceMean', [x], { axes: { ints: [2] }, keepdims: { i: 1 } })])))).toBe(
      'ReduceMean over the time axis',
    );
    expect(
      refusal(
        graphWith((g, x) =>
          g.op('Conv', [x, g.floats(new Float32Array(MELS * 3), [MELS, 1, 3])], {
            group: { i: MELS },
            kernel_shape: { ints: [3] },
            auto_pad: { s: 'SAME_UPPER' },
          }),
        ),
      ),
    ).toBe('Conv with auto_pad SAME_UPPER');
    expect(refusal(graphWith((g, x) => g.op('Cumsum', [x, g.constant({ type: 'int64', dims: [], data: [2] })])))).toBe('operator Cumsum on the time axis');
    expect(refusal(graphWith((g, x) => g.op('Relu', [x])))).toBe('streamable');
  });
});
