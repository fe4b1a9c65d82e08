/**
 * A reduced-width QuartzNet 15×5 in the `ctc-nemo` export layout, built with the graph builder so that
 * `npm test` runs the streaming conv path on the real graph shapes: the same node sequence torch.onnx writes
 * for models/real-size/quartznet_ctc.py (the input length mask Shape/Gather/Cast/Range/Unsqueeze/Less/Cast/
 * Unsqueeze/Mul, batch norm folded into the pointwise convs' biases), the real kernels (C1 33 with stride 2,
 * blocks 33/39/51/63/75 with a 1×1 residual into each block's last sub-block, C2 87 with dilation 2, C3 1×1,
 * the 1×1 decoder, Transpose, LogSoftmax) — but few channels, one block per kernel size and `repeat` sub-blocks
 * each. Seeded random weights; `normalize: NA` and `pad_to: 16` as a streaming NeMo config has them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { GraphBuilder } from '../../../../../src/engines/onnx/graph-builder.js';
import { seededRandom } from '../../../../helpers/seeded-random.js';

export const REDUCED_QUARTZNET_TOKENS = [' ', 'a', 'b', 'd', 'e', 'i', 'k', 'm', 'n', 'o', 's', 'u'];
const N_MELS = 64;
const BLOCK_KERNELS = [33, 39, 51, 63, 75];

export interface ReducedQuartzNetOptions {
  seed?: number;
  channels?: number;
  /** Sub-blocks per block (QuartzNet: 5). */
  repeat?: number;
}

export function reducedQuartzNet(options: ReducedQuartzNetOptions = {}): Uint8Array {
  const random = seededRandom(options.seed ?? 20261128);
  const width = options.channels ?? 12;
  const repeat = options.repeat ?? 2;
  const g = new GraphBuilder('reduced-quartznet');
  const uniform = (n: number, scale: number) => Float32Array.from({ length: n }, () => (random() * 2 - 1) * scale);
  const scalar = (v: number) => g.constant({ type: 'int64', dims: [], data: [v] });

  const audio = g.input('audio_signal', 'float', ['B', N_MELS, 'T']);
  const length = g.input('length', 'int64', ['B']);
  const time = g.op('Cast', [g.op('Gather', [g.op('Shape', [audio]), scalar(2)], { axis: { i: 0 } })], { to: { i: 7 } });
  const steps = g.op('Unsqueeze', [g.op('Range', [scalar(0), time, scalar(1)]), g.int64s([0])]);
  const valid = g.op('Cast', [g.op('Less', [steps, g.op('Unsqueeze', [length, g.int64s([1])])])], { to: { i: 1 } });
  let h = g.op('Mul', [audio, g.op('Unsqueeze', [valid, g.int64s([1])])]);

  /** Depthwise conv (no bias) then pointwise conv with the folded batch norm as its bias. */
  const separable = (x: string, cIn: number, cOut: number, kernel: number, stride = 1, dilation = 1): string => {
    const pad = Math.floor(kernel / 2) * dilation;
    const depthwise = g.op('Conv', [x, g.floats(uniform(cIn * kernel, 1 / Math.sqrt(kernel)), [cIn, 1, kernel])], {
      dilations: { ints: [dilation] },
      group: { i: cIn },
      kernel_shape: { ints: [kernel] },
      pads: { ints: [pad, pad] },
      strides: { ints: [stride] },
    });
    return pointwise(depthwise, cIn, cOut);
  };
  const pointwise = (x: string, cIn: number, cOut: number): string =>
    g.op('Conv', [x, g.floats(uniform(cOut * cIn, Math.sqrt(3 / cIn)), [cOut, cIn, 1]), g.floats(uniform(cOut, 0.1))], {
      dilations: { ints: [1] },
      group: { i: 1 },
      kernel_shape: { ints: [1] },
      pads: { ints: [0, 0] },
      strides: { ints: [1] },
    });

  h = g.op('Relu', [separable(h, N_MELS, width, 33, 2)]);
  for (const kernel of BLOCK_KERNELS) {
    const input = h;
    let x = input;
    for (let i = 0; i < repeat; i++) {
      x = separable(x, width, width, kernel);
      if (i < repeat - 1) x = g.op('Relu', [x]);
    }
    h = g.op('Relu', [g.op('Add', [x, pointwise(input, width, width)])]);
  }
  h = g.op('Relu', [separable(h, width, width, 87, 1, 2)]);
  h = g.op('Relu', [pointwise(h, width, 2 * width)]);
  const logits = pointwise(h, 2 * width, REDUCED_QUARTZNET_TOKENS.length + 1);
  g.op('LogSoftmax', [g.op('Transpose', [logits], { perm: { ints: [0, 2, 1] } })], { axis: { i: -1 } }, 'logprobs');
  g.output('logprobs', 'float', ['B', 'T_out', REDUCED_QUARTZNET_TOKENS.length + 1]);
  return g.toBytes({ opset: 14 });
}

/** Writes model.onnx, tokens.txt and model_config.json into `dir` (the files a NeMo export ships). */
export function writeReducedQuartzNet(dir: string, options: ReducedQuartzNetOptions = {}): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'model.onnx'), reducedQuartzNet(options));
  const tokens = [...REDUCED_QUARTZNET_TOKENS, '<blk>'].map((t, i) => `${t === ' ' ? '▁' : t} ${i}`);
  fs.writeFileSync(path.join(dir, 'tokens.txt'), tokens.join('\n') + '\n');
  const preprocessor = {
    sample_rate: 16000,
    normalize: 'NA',
    window_size: 0.02,
    window_stride: 0.01,
    window: 'hann',
    features: N_MELS,
    n_fft: 512,
    preemph: 0.97,
    log: true,
    frame_splicing: 1,
    dither: 0,
    pad_to: 16,
  };
  fs.writeFileSync(path.join(dir, 'model_config.json'), JSON.stringify({ sample_rate: 16000, preprocessor, encoder: { subsampling_factor: 2 } }, null, 2));
}

/** Speech-like test audio at 16 kHz: gliding tones in bursts with pauses, and a little noise. */
export function toneBursts(samples: number, seed: number): Float32Array {
  const random = seededRandom(seed);
  const out = new Float32Array(samples);
  let phase = 0;
  for (let i = 0; i < samples; i++) {
    const burst = Math.sin((i / 16000) * Math.PI * (1.3 + (seed % 5) / 4)) > -0.3 ? 1 : 0;
    phase += (2 * Math.PI * (300 + 200 * Math.sin(i / 9000 + seed))) / 16000;
    out[i] = burst * (0.3 * Math.sin(phase) + 0.1 * Math.sin(3.1 * phase)) + (random() - 0.5) * 0.02;
  }
  return out;
}
