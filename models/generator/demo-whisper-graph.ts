/**
 * The encoder graph of the demo Whisper model (see demo-whisper.ts for what the model says and why):
 * `input_features [B,80,3000]` → `last_hidden_state [B,1500,8]`, which finds the speech regions of the
 * window; plus the graph-building helpers its decoder (demo-whisper-decoder.ts) shares. Variants: fp32;
 * "fp16-shaped" (every float input and output is float16, computed in float32 between Cast nodes, as the
 * builder writes no float16 initializers); "quantized-shaped" (weights are uint8 initializers read through
 * DequantizeLinear).
 */
import onnxProto from 'onnx-proto';
import { GraphBuilder, type Attr, type ElemType } from '../../src/engines/onnx/graph-builder.js';

const { onnx } = onnxProto;

export const D_MODEL = 8;
export const HEADS = 2;
export const HEAD_DIM = D_MODEL / HEADS;
export const LAYERS = 2;
export const MELS = 80;
export const MEL_FRAMES = 3000;
export const FRAMES = 1500;
/** Regions per window the encoder lists (more are ignored): 30 s holds at most ~70 regions of ≥ 0.1 s. */
export const MAX_REGIONS = 64;
/** A 20 ms frame is speech when its loudest mel is this far (normalised log-mel units: 1 = 40 dB) above the window's floor. */
export const SPEECH_THRESHOLD = 1;
/** Pauses up to 2·CLOSE frames are bridged (the demo voice leaves 50 ms between symbols); runs under 2·OPEN+1 frames are dropped. */
export const CLOSE_RADIUS = 8;
export const OPEN_RADIUS = 2;
/** One phrase bucket per second of region length. */
export const BUCKET_FRAMES = 50;

export interface GraphVariant {
  fp16: boolean;
  quantized: boolean;
  /** Declare `cache_position` as transformers 4.43–4.45 exports do. */
  cachePosition: boolean;
}

export type Uint8Tensor = { name: string; dims: number[]; data: Uint8Array };

/** Unique value names inside one (sub)graph; uint8 weights are collected and added afterwards. */
export class Scope {
  private n = 0;
  constructor(
    readonly g: GraphBuilder,
    private readonly prefix: string,
    private readonly variant: GraphVariant,
    private readonly bytes: Uint8Tensor[],
  ) {}
  op(type: string, inputs: string[], attrs: Record<string, Attr> = {}, output?: string): string {
    return this.g.op(type, inputs, attrs, output ?? `${this.prefix}${type}_${this.n++}`);
  }
  i64(values: number[], dims: number[] = [values.length]): string {
    return this.g.constant({ type: 'int64', dims, data: values }, `${this.prefix}i64_${this.n++}`);
  }
  f32(values: number[], dims: number[] = [values.length]): string {
    return this.g.constant({ type: 'float', dims, data: values }, `${this.prefix}f32_${this.n++}`);
  }
  /** A weight: float32, or uint8 steps of 0.5 read through DequantizeLinear in the quantized variant. */
  weight(values: number[], dims: number[]): string {
    if (!this.variant.quantized) return this.f32(values, dims);
    const name = `${this.prefix}w_${this.n++}`;
    const steps = values.map((v) => v / 0.5);
    if (steps.some((q) => !Number.isInteger(q) || q < 0 || q > 255)) throw new Error('demo weight does not fit uint8 steps of 0.5');
    this.bytes.push({ name, dims, data: Uint8Array.from(steps) }, { name: `${name}_zp`, dims: [], data: Uint8Array.of(0) });
    return this.op('DequantizeLinear', [name, this.f32([0.5], []), `${name}_zp`]);
  }
  float(name: string): string {
    return this.variant.fp16 ? this.op('Cast', [name], { to: { i: 1 } }) : name;
  }
  io(value: string): string {
    return this.variant.fp16 ? this.op('Cast', [value], { to: { i: 10 } }) : value;
  }
}

export function serialize(g: GraphBuilder, bytes: Uint8Tensor[]): Uint8Array {
  if (!bytes.length) return g.toBytes();
  const model = onnx.ModelProto.decode(g.toBytes());
  for (const t of bytes)
    model.graph!.initializer!.push(onnx.TensorProto.create({ name: t.name, dims: t.dims, dataType: onnx.TensorProto.DataType.UINT8, rawData: t.data }));
  return onnx.ModelProto.encode(model).finish();
}

export const ioType = (v: GraphVariant): ElemType => (v.fp16 ? 'float16' : 'float');
export const FLOAT = { to: { i: 1 } };
export const INT64 = { to: { i: 7 } };

/**
 * Encoder. Per 20 ms frame (two mel frames): speech when the loudest mel exceeds the window's quietest
 * value by SPEECH_THRESHOLD; short pauses bridged, clicks dropped (morphological closing, then opening,
 * with MaxPool). The regions are listed in frames 0..63 of features 1–3 (start frame, end frame + 1,
 * present); feature 0 is the frame's speech flag, feature 4 its loudness.
 */
export function encoderGraph(v: GraphVariant): Uint8Array {
  const g = new GraphBuilder('whisper_encoder');
  const bytes: Uint8Tensor[] = [];
  const s = new Scope(g, 'e/', v, bytes);
  g.input('input_features', ioType(v), ['batch_size', MELS, MEL_FRAMES]);
  g.output('last_hidden_state', ioType(v), ['batch_size', FRAMES, D_MODEL]);
  const x = s.float('input_features');
  const loudest = s.op('ReduceMax', [x], { axes: { ints: [1] }, keepdims: { i: 0 } });
  const floor = s.op('ReduceMin', [x], { axes: { ints: [1, 2] }, keepdims: { i: 0 } });
  const above = s.op('Sub', [loudest, s.op('Unsqueeze', [floor, s.i64([1])])]);
  const melSpeech = s.op('Cast', [s.op('Greater', [above, s.f32([SPEECH_THRESHOLD], [])])], FLOAT);
  const pairMax = (t: string) => s.op('ReduceMax', [s.op('Reshape', [t, s.i64([0, FRAMES, 2])])], { axes: { ints: [2] }, keepdims: { i: 0 } });
  const dilate = (t: string, r: number) => s.op('MaxPool', [t], { kernel_shape: { ints: [2 * r + 1] }, pads: { ints: [r, r] }, strides: { ints: [1] } });
  const erode = (t: string, r: number) => s.op('Neg', [dilate(s.op('Neg', [t]), r)]);
  let speech = s.op('Unsqueeze', [pairMax(melSpeech), s.i64([1])]);
  speech = erode(dilate(speech, CLOSE_RADIUS), CLOSE_RADIUS);
  speech = dilate(erode(speech, OPEN_RADIUS), OPEN_RADIUS);
  const frame = s.op('Squeeze', [speech, s.i64([1])]);
  const padded = s.op('Pad', [frame, s.i64([0, 1, 0, 1])]);
  const one = s.f32([1], []);
  const prev = s.op('Slice', [padded, s.i64([0]), s.i64([FRAMES]), s.i64([1])]);
  const next = s.op('Slice', [padded, s.i64([2]), s.i64([FRAMES + 2]), s.i64([1])]);
  const onset = s.op('Mul', [frame, s.op('Sub', [one, prev])]);
  const offset = s.op('Mul', [frame, s.op('Sub', [one, next])]);
  const ordinals = s.f32(
    Array.from({ length: MAX_REGIONS }, (_, k) => k + 1),
    [MAX_REGIONS, 1],
  );
  /** Σ_t value[t] over the k-th mark (marks counted by CumSum), for k < MAX_REGIONS: [B, K]. */
  const perRegion = (marks: string, value: string) => {
    const rank = s.op('Unsqueeze', [s.op('CumSum', [marks, s.i64([1], [])]), s.i64([1])]);
    const selected = s.op('Mul', [s.op('Cast', [s.op('Equal', [rank, ordinals])], FLOAT), s.op('Unsqueeze', [marks, s.i64([1])])]);
    return s.op('ReduceSum', [s.op('Mul', [selected, value]), s.i64([2])], { keepdims: { i: 0 } });
  };
  const index = Array.from({ length: FRAMES }, (_, t) => t);
  const starts = perRegion(onset, s.f32(index));
  const ends = perRegion(offset, s.f32(index.map((t) => t + 1)));
  const present = perRegion(onset, s.f32(index.map(() => 1)));
  const column = (t: string) => s.op('Unsqueeze', [t, s.i64([2])]);
  const list = s.op('Concat', [column(starts), column(ends), column(present)], { axis: { i: 2 } });
  const regions = s.op('Pad', [list, s.i64([0, 0, 0, 0, FRAMES - MAX_REGIONS, 0])]);
  const zeros = s.op('Mul', [regions, s.f32([0], [])]);
  const hidden = s.op('Concat', [column(frame), regions, column(pairMax(loudest)), zeros], { axis: { i: 2 } });
  // A per-feature scale of ones. Not a MatMul: onnxruntime fuses DequantizeLinear → MatMul into a dynamically
  // quantised MatMul, which rounds the activations (frame numbers) to uint8 steps.
  g.op('Identity', [s.io(s.op('Mul', [hidden, s.weight(new Array<number>(D_MODEL).fill(1), [D_MODEL])]))], {}, 'last_hidden_state');
  return serialize(g, bytes);
}
