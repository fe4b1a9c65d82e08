/**
 * Demo CTC speech recognisers in the two real export layouts (HF wav2vec2/MMS and NeMo), built to
 * transcribe the demo voice exactly, so the CTC runner is tested end to end on real graphs with the real
 * I/O names, dtypes and ranks and the real sidecar files.
 *
 * How they recognise: each frame's spectrum is pooled into band log-energies and mean-centred across bands
 * (loudness-independent), then a nearest-centroid head scores each symbol as −½‖f − t_k‖² with centroids
 * t_k measured here on every rendered symbol through the very same feature computation. The blank's logit
 * is driven by frame energy, β·(θ − e): the gaps between symbols are silence and come out as blank, which
 * is also what separates repeated letters ("kk"). wav2vec2 input is normalised to unit variance by the
 * runner, so speech energy sits on a known scale; the NeMo demo uses `normalize: NA` log-mels, whose scale
 * is the demo voice's own level.
 */
import fs from 'node:fs';
import path from 'node:path';
import { GraphBuilder } from '../../src/engines/onnx/graph-builder.js';
import { DEMO_SYMBOLS, speakDemo } from './demo-voice.js';
import { DEFAULT_NEMO_FEATURES, nemoLogMel, type NemoFeatureConfig } from '../../src/engines/asr/nemo-features.js';

const SAMPLE_RATE = 16000;
/** wav2vec2 conv stack: 400-sample receptive field, 320-sample hop (20 ms frames). */
const W2V_WINDOW = 400;
const W2V_HOP = 320;
/** Mel-spaced triangular bands over the formant range of the demo voice (F1 300–1200 Hz, F2 1.4–3.2 kHz). */
const W2V_BANDS = 24;
const W2V_LOW_HZ = 200;
const W2V_HIGH_HZ = 3800;
const W2V_EPS = 0.01;
/** Blank threshold sits this far (in log energy) below a fully voiced frame: about half a frame of voice. */
const W2V_THRESHOLD_DROP = 4;
const NEMO_THRESHOLD_DROP = 8;
const NEMO_SUBSAMPLING = 2;
/** Logit scales: symbol distances are ≈1–5 inside a symbol and ≥ 50 between symbols. */
const ALPHA = 1;
const BETA = 4;

export const DEMO_NEMO_FEATURES: NemoFeatureConfig = { ...DEFAULT_NEMO_FEATURES, nMels: 64, normalize: 'NA', padTo: 0 };

interface FrameFeatures {
  /** Mean-centred band log-energies per frame. */
  features: Float64Array[];
  /** Log of the total band energy per frame. */
  energy: number[];
}

const toMel = (hz: number) => 2595 * Math.log10(1 + hz / 700);
const fromMel = (mel: number) => 700 * (10 ** (mel / 2595) - 1);

/** Conv1D STFT kernels (periodic Hann × cos/sin, bins at 40 Hz) and the matrix pooling |X|² into bands. */
function w2vFilterbank(): { bins: number[]; kernels: Float32Array; pooling: Float32Array } {
  const edges = Array.from({ length: W2V_BANDS + 2 }, (_, i) => fromMel(toMel(W2V_LOW_HZ) + ((toMel(W2V_HIGH_HZ) - toMel(W2V_LOW_HZ)) * i) / (W2V_BANDS + 1)));
  const binHz = SAMPLE_RATE / W2V_WINDOW;
  const bins: number[] = [];
  for (let k = Math.floor(edges[0]! / binHz); k <= Math.ceil(edges.at(-1)! / binHz); k++) bins.push(k);
  const kernels = new Float32Array(2 * bins.length * W2V_WINDOW);
  const pooling = new Float32Array(2 * bins.length * W2V_BANDS);
  bins.forEach((k, b) => {
    for (let n = 0; n < W2V_WINDOW; n++) {
      const w = 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / W2V_WINDOW);
      kernels[2 * b * W2V_WINDOW + n] = w * Math.cos((2 * Math.PI * k * n) / W2V_WINDOW);
      kernels[(2 * b + 1) * W2V_WINDOW + n] = w * Math.sin((2 * Math.PI * k * n) / W2V_WINDOW);
    }
    for (let m = 0; m < W2V_BANDS; m++) {
      const [left, centre, right] = [edges[m]!, edges[m + 1]!, edges[m + 2]!];
      const hz = k * binHz;
      const weight = Math.max(0, Math.min((hz - left) / (centre - left), (right - hz) / (right - centre)));
      pooling[2 * b * W2V_BANDS + m] = weight; // cos² and sin² of a bin share its band weight
      pooling[(2 * b + 1) * W2V_BANDS + m] = weight;
    }
  });
  return { bins, kernels, pooling };
}

function centre(logs: Float64Array): Float64Array {
  const mean = logs.reduce((a, b) => a + b, 0) / logs.length;
  return logs.map((v) => v - mean);
}

/** The wav2vec2 demo's features in JS, mirroring its graph (same float32 kernels), on normalised input. */
function w2vFeatures(samples: Float32Array, bank: ReturnType<typeof w2vFilterbank>): FrameFeatures {
  let mean = 0;
  for (const v of samples) mean += v;
  mean /= samples.length;
  let variance = 0;
  for (const v of samples) variance += (v - mean) ** 2;
  const scale = 1 / Math.sqrt(variance / samples.length + 1e-7);
  const x = Float64Array.from(samples, (v) => (v - mean) * scale);
  const channels = 2 * bank.bins.length;
  const out: FrameFeatures = { features: [], energy: [] };
  for (let t = 0; t + W2V_WINDOW <= x.length; t += W2V_HOP) {
    const bands = new Float64Array(W2V_BANDS);
    for (let c = 0; c < channels; c++) {
      let dot = 0;
      for (let n = 0; n < W2V_WINDOW; n++) dot += bank.kernels[c * W2V_WINDOW + n]! * x[t + n]!;
      for (let m = 0; m < W2V_BANDS; m++) bands[m]! += dot * dot * bank.pooling[c * W2V_BANDS + m]!;
    }
    out.energy.push(Math.log(bands.reduce((a, b) => a + b, 0) + W2V_EPS));
    out.features.push(centre(bands.map((b) => Math.log(b + W2V_EPS))));
  }
  return out;
}

/** The NeMo demo's features: the runner's own log-mels, averaged over frame pairs as the graph does. */
function nemoFeatures(samples: Float32Array): FrameFeatures {
  const mel = nemoLogMel(samples, DEMO_NEMO_FEATURES);
  const { nMels } = DEMO_NEMO_FEATURES;
  const out: FrameFeatures = { features: [], energy: [] };
  for (let k = 0; k * NEMO_SUBSAMPLING < mel.validFrames; k++) {
    const cols = [2 * k, 2 * k + 1].filter((t) => t < mel.validFrames);
    const logs = new Float64Array(nMels);
    for (let m = 0; m < nMels; m++) logs[m] = cols.reduce((a, t) => a + mel.data[m * mel.frames + t]!, 0) / cols.length;
    out.energy.push(Math.log(logs.reduce((a, v) => a + Math.exp(v), 0)));
    out.features.push(centre(logs));
  }
  return out;
}

type Spoken = ReturnType<typeof speakDemo>;

/** Centroid of each symbol over the frames lying wholly inside it, and the mean voiced-frame energy. */
function measureSymbols(spoken: Spoken[], extract: (samples: Float32Array) => FrameFeatures, frameSeconds: number, windowSeconds: number) {
  const centroids: Float64Array[] = [];
  let energySum = 0;
  let energyCount = 0;
  for (const { samples, symbols } of spoken) {
    const { start, end } = symbols[0]!;
    const frames = extract(samples);
    const inside = frames.features.map((_, i) => i).filter((i) => i * frameSeconds >= start && i * frameSeconds + windowSeconds <= end);
    const sum = new Float64Array(frames.features[0]!.length);
    for (const i of inside) {
      frames.features[i]!.forEach((v, m) => (sum[m]! += v));
      energySum += frames.energy[i]!;
      energyCount++;
    }
    centroids.push(sum.map((v) => v / inside.length));
  }
  return { centroids, voicedEnergy: energySum / energyCount };
}

/**
 * Head nodes: `features` [B,T,M] (mean-centred) and `energy` [B,T,1] → scores [B,T,V] with the symbol
 * scores in `order` (an entry of -1 is a token that never fires, like [UNK]) and the blank appended last.
 */
function addHead(g: GraphBuilder, features: string, energy: string, centroids: Float64Array[], order: number[], threshold: number, output?: string): string {
  const dims = centroids[0]!.length;
  const weights = new Float32Array(dims * order.length);
  const bias = new Float32Array(order.length);
  order.forEach((symbol, col) => {
    if (symbol < 0) return void (bias[col] = -1e4);
    const t = centroids[symbol]!;
    for (let m = 0; m < dims; m++) weights[m * order.length + col] = ALPHA * t[m]!;
    bias[col] = -0.5 * ALPHA * t.reduce((a, v) => a + v * v, 0);
  });
  const dots = g.op('Add', [g.op('MatMul', [features, g.floats(weights, [dims, order.length])]), g.floats(bias)]);
  const norm = g.op('Mul', [g.op('ReduceSumSquare', [features], { axes: { ints: [-1] }, keepdims: { i: 1 } }), g.floats([-0.5 * ALPHA])]);
  const symbols = g.op('Add', [dots, norm]);
  const blank = g.op('Mul', [g.op('Sub', [g.floats([threshold]), energy]), g.floats([BETA])]);
  return g.op('Concat', [symbols, blank], { axis: { i: -1 } }, output);
}

function centreNodes(g: GraphBuilder, logs: string): string {
  return g.op('Sub', [logs, g.op('ReduceMean', [logs], { axes: { ints: [-1] }, keepdims: { i: 1 } })]);
}

async function writeWav2vec2(dir: string, spoken: Spoken[]): Promise<void> {
  const bank = w2vFilterbank();
  const { centroids, voicedEnergy } = measureSymbols(spoken, (s) => w2vFeatures(s, bank), W2V_HOP / SAMPLE_RATE, W2V_WINDOW / SAMPLE_RATE);
  // Vocabulary as HF CTC fine-tunes write it: letters, "|" for the space, then [UNK], and [PAD] (the blank) last.
  const letters = DEMO_SYMBOLS.filter((s) => s !== ' ');
  const vocab: Record<string, number> = {};
  letters.forEach((s, i) => (vocab[s] = i));
  vocab['|'] = letters.length;
  vocab['[UNK]'] = letters.length + 1;
  vocab['[PAD]'] = letters.length + 2;
  const order = [...letters.map((s) => DEMO_SYMBOLS.indexOf(s)), DEMO_SYMBOLS.indexOf(' '), -1];

  const g = new GraphBuilder('demo-wav2vec2-ctc');
  const input = g.input('input_values', 'float', ['batch_size', 'sequence_length']);
  const channels = 2 * bank.bins.length;
  const wave = g.op('Unsqueeze', [input, g.int64s([1])]);
  const spectrum = g.op('Conv', [wave, g.floats(bank.kernels, [channels, 1, W2V_WINDOW])], {
    kernel_shape: { ints: [W2V_WINDOW] },
    strides: { ints: [W2V_HOP] },
  });
  const power = g.op('Transpose', [g.op('Mul', [spectrum, spectrum])], { perm: { ints: [0, 2, 1] } });
  const bands = g.op('MatMul', [power, g.floats(bank.pooling, [channels, W2V_BANDS])]);
  const eps = g.floats([W2V_EPS]);
  const energy = g.op('Log', [g.op('Add', [g.op('ReduceSum', [bands, g.int64s([-1])], { keepdims: { i: 1 } }), eps])]);
  const features = centreNodes(g, g.op('Log', [g.op('Add', [bands, eps])]));
  addHead(g, features, energy, centroids, order, voicedEnergy - W2V_THRESHOLD_DROP, 'logits');
  g.output('logits', 'float', ['batch_size', 'sequence_length_out', order.length + 1]);

  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'model.onnx'), g.toBytes());
  const json = (name: string, value: unknown) => fs.writeFileSync(path.join(dir, name), JSON.stringify(value, null, 2) + '\n');
  json('vocab.json', vocab);
  json('config.json', {
    architectures: ['Wav2Vec2ForCTC'],
    model_type: 'wav2vec2',
    vocab_size: order.length + 1,
    pad_token_id: vocab['[PAD]'],
    bos_token_id: 1,
    eos_token_id: 2,
    ctc_loss_reduction: 'mean',
    conv_kernel: [10, 3, 3, 3, 3, 2, 2],
    conv_stride: [5, 2, 2, 2, 2, 2, 2],
    feat_extract_norm: 'layer',
    do_stable_layer_norm: true,
  });
  json('preprocessor_config.json', {
    do_normalize: true,
    feature_extractor_type: 'Wav2Vec2FeatureExtractor',
    feature_size: 1,
    padding_side: 'right',
    padding_value: 0.0,
    processor_class: 'Wav2Vec2Processor',
    return_attention_mask: true,
    sampling_rate: SAMPLE_RATE,
  });
  json('tokenizer_config.json', {
    tokenizer_class: 'Wav2Vec2CTCTokenizer',
    word_delimiter_token: '|',
    unk_token: '[UNK]',
    pad_token: '[PAD]',
    bos_token: null,
    eos_token: null,
    do_lower_case: false,
  });
}

async function writeNemo(dir: string, spoken: Spoken[]): Promise<void> {
  const frameSeconds = (DEMO_NEMO_FEATURES.hopLength * NEMO_SUBSAMPLING) / SAMPLE_RATE;
  const { centroids, voicedEnergy } = measureSymbols(spoken, nemoFeatures, frameSeconds, frameSeconds);
  // NeMo character vocabulary: the space first, then the letters; the blank is appended after the last id.
  const order = [DEMO_SYMBOLS.indexOf(' '), ...DEMO_SYMBOLS.map((_, i) => i).filter((i) => DEMO_SYMBOLS[i] !== ' ')];
  const nMels = DEMO_NEMO_FEATURES.nMels;

  const g = new GraphBuilder('demo-nemo-ctc');
  const audio = g.input('audio_signal', 'float', ['batch', nMels, 'time']);
  const length = g.input('length', 'int64', ['batch']);
  // Frames at or past `length` are padding: treat them as silence.
  const time = g.op('Gather', [g.op('Shape', [audio]), g.constant({ type: 'int64', dims: [], data: [2] })], { axis: { i: 0 } });
  const steps = g.op('Range', [g.constant({ type: 'int64', dims: [], data: [0] }), time, g.constant({ type: 'int64', dims: [], data: [1] })]);
  const valid = g.op('Less', [steps, g.op('Unsqueeze', [length, g.int64s([1])])]);
  const masked = g.op('Where', [g.op('Unsqueeze', [valid, g.int64s([1])]), audio, g.floats([-30])]);
  // 2× time subsampling ("same" padding at the end, as QuartzNet's strided first conv): T' = ceil(T/2).
  const pooled = g.op('AveragePool', [masked], { kernel_shape: { ints: [2] }, strides: { ints: [2] }, pads: { ints: [0, 1] }, count_include_pad: { i: 0 } });
  const logs = g.op('Transpose', [pooled], { perm: { ints: [0, 2, 1] } });
  const energy = g.op('Log', [g.op('ReduceSum', [g.op('Exp', [logs]), g.int64s([-1])], { keepdims: { i: 1 } })]);
  const scores = addHead(g, centreNodes(g, logs), energy, centroids, order, voicedEnergy - NEMO_THRESHOLD_DROP);
  g.op('LogSoftmax', [scores], { axis: { i: -1 } }, 'logprobs');
  g.output('logprobs', 'float', ['batch', 'time_out', order.length + 1]);

  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'model.onnx'),
    g.toBytes({
      metadata: { model_type: 'EncDecCTCModel', vocab_size: String(order.length), subsampling_factor: String(NEMO_SUBSAMPLING), normalize_type: '' },
    }),
  );
  // sherpa-onnx tokens.txt: "<token> <id>", SentencePiece's ▁ standing for the word boundary, blank last.
  const tokens = order.map((symbol, id) => `${DEMO_SYMBOLS[symbol] === ' ' ? '▁' : DEMO_SYMBOLS[symbol]} ${id}`);
  fs.writeFileSync(path.join(dir, 'tokens.txt'), [...tokens, `<blk> ${order.length}`].join('\n') + '\n');
  // NeMo's model_config.yaml, as JSON: the preprocessor section is what the runner reproduces.
  const config = {
    sample_rate: SAMPLE_RATE,
    preprocessor: {
      _target_: 'nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor',
      sample_rate: SAMPLE_RATE,
      normalize: DEMO_NEMO_FEATURES.normalize,
      window_size: DEMO_NEMO_FEATURES.winLength / SAMPLE_RATE,
      window_stride: DEMO_NEMO_FEATURES.hopLength / SAMPLE_RATE,
      window: DEMO_NEMO_FEATURES.window,
      features: nMels,
      n_fft: DEMO_NEMO_FEATURES.nFft,
      preemph: DEMO_NEMO_FEATURES.preemph,
      log: true,
      log_zero_guard_value: DEMO_NEMO_FEATURES.logGuard,
      frame_splicing: 1,
      dither: 0,
      pad_to: DEMO_NEMO_FEATURES.padTo,
      pad_value: 0,
    },
    encoder: { subsampling_factor: NEMO_SUBSAMPLING },
    decoder: { num_classes: order.length, vocabulary: order.map((s) => DEMO_SYMBOLS[s]) },
  };
  fs.writeFileSync(path.join(dir, 'model_config.json'), JSON.stringify(config, null, 2) + '\n');
}

/** Writes `outDir/ctc-wav2vec2/` and `outDir/ctc-nemo/`. Deterministic: the same bytes on every run. */
export async function generateCtcModels(outDir: string): Promise<void> {
  // Each symbol spoken alone (rendering is the slow part): centroids are measured on these.
  const spoken = DEMO_SYMBOLS.map((symbol) => speakDemo(symbol, SAMPLE_RATE));
  await writeWav2vec2(path.join(outDir, 'ctc-wav2vec2'), spoken);
  await writeNemo(path.join(outDir, 'ctc-nemo'), spoken);
}
