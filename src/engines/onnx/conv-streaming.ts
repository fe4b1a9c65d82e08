/**
 * Turns a convolutional speech model (NeMo QuartzNet/Jasper-style: 1-D convs with any kernel, stride,
 * dilation and groups, per-frame maths, residual adds, an input length mask) into a streaming *step* graph
 * that encodes audio piece by piece and carries its state, so that the steps over any split of the input,
 * then a final step, give exactly the frames one run over the whole input gives.
 *
 * Every value with a time axis is carried as a chunk of consecutive steps of it, its "stream"; each stream
 * knows how many of its chunk's frames are real (`count`; the rest, if any, only keeps tensors non-empty,
 * since onnxruntime's Conv refuses empty input). Rules:
 * - An op with temporal extent (Conv, AveragePool) keeps a cache of the input frames its next outputs still
 *   need. It starts as `pads[0]` zero frames (the whole run's left zero padding) and the op runs unpadded on
 *   [cache | new frames], producing every output whose window is complete. So no output is ever computed
 *   before position 0 and no layer computes anything twice.
 * - At the final step (`stream_final` = 1) each such op appends `pads[1]` zeros (the whole run's right zero
 *   padding), which yields its outputs up to the end exactly as the whole run's. Before the final step no
 *   output can depend on the end padding: its window would reach input not yet given.
 * - Ops reading several streams (the residual Add: the main path lags the skip path by the blocks' pads)
 *   buffer each input and emit the frames all inputs have reached.
 * - Per-frame ops (conv-stream-ops.ts) are copied as they are.
 * - The input length mask's positions (`Range(0, T)`) become absolute: `Range(p, p + T)`, `p` the position of
 *   the step's first input frame (`stream_position`); `length` is fed as the model's, or a huge number while
 *   the end is unknown — so frames at or past `length` (pad_to padding) may only come in the final step.
 * Graphs with other ops on the time axis are refused with a reason, and the caller keeps its windowed path.
 */
import onnxProto from 'onnx-proto';
import { GraphBuilder, type Attr } from './graph-builder.js';
import { attrInt, attrInts, attrString, constants, defaultOpset, neededNodes, type ConstTensor, type NodeProto } from './graph-reader.js';
import { FLOAT, INT64, isPerFrameOp, perFrameShape, type Shape } from './conv-stream-ops.js';

export const STREAM_POSITION = 'stream_position';
export const STREAM_FINAL = 'stream_final';

/** One piece of carried state: a graph input and the output that gives its next value (float32). */
export interface StreamCache {
  input: string;
  output: string;
  /** Its dims with the time axis at `axis` set to the initial number of frames (zeros). */
  dims: number[];
  axis: number;
}

export interface ConvStreamGraph {
  bytes: Uint8Array;
  caches: StreamCache[];
  /** Whether the step graph reads the `length` input. */
  usesLength: boolean;
  /**
   * Input frames an output frame reads ahead of its own position: no output frame can come out before that
   * much more input has (QuartzNet 15×5: ≈ 4000 frames, 40 s), and the final step computes what is pending.
   */
  lookahead: number;
}

interface Stream {
  /** Name of the 1-D int64 [1] tensor with the number of real frames in this step's chunk. */
  count: string;
  /** Whether every frame of the chunk is real (no guard frames). */
  exact: boolean;
  /** Input frames per frame of this stream, and input frames its frames read ahead. */
  stride: number;
  lookahead: number;
}
type Temporal = Shape & { kind: 'temporal'; stream: Stream };
type Value = Temporal | (Shape & { kind: 'fixed' }) | { kind: 'shapeOf'; of: Temporal } | { kind: 'timeLength'; stream: Stream };

class Unsupported extends Error {}
const BIG = 2 ** 62;

export function convStreamGraph(
  modelBytes: Uint8Array,
  io: { audio: string; length: string; output: string; channels?: number },
): ConvStreamGraph | { unsupported: string } {
  try {
    return new StepGraph(modelBytes, io).build();
  } catch (err) {
    if (err instanceof Unsupported) return { unsupported: err.message };
    throw err;
  }
}

class StepGraph {
  private readonly model: onnxProto.onnx.IModelProto;
  private readonly opset: number;
  private readonly consts: Map<string, ConstTensor>;
  private readonly values = new Map<string, Value>();
  private readonly g = new GraphBuilder('kuma-conv-stream', 'kuma_stream/');
  private readonly caches: StreamCache[] = [];
  private readonly memo = new Map<string, string>();

  constructor(
    bytes: Uint8Array,
    private readonly io: { audio: string; length: string; output: string; channels?: number },
  ) {
    this.model = onnxProto.onnx.ModelProto.decode(bytes);
    this.opset = defaultOpset(this.model);
    this.consts = constants(this.model.graph ?? {});
  }

  build(): ConvStreamGraph {
    const graph = this.model.graph ?? {};
    if (this.opset < 12) throw new Unsupported(`opset ${this.opset} (12 or later is needed)`);
    const nodes = neededNodes(graph, [this.io.output]);
    const used = new Set(nodes.flatMap((n) => n.input ?? []));
    const declared = graph.input?.find((i) => i.name === this.io.audio)?.type?.tensorType?.shape?.dim?.[1]?.dimValue;
    const channels = declared ? Number(declared) : this.io.channels;
    if (!channels) throw new Unsupported(`the number of ${this.io.audio} features is unknown`);
    const audio = this.g.input(this.io.audio, 'float', [1, channels, 'T']);
    const input: Stream = { count: this.timeLength(audio, 2), exact: true, stride: 1, lookahead: 0 };
    this.values.set(audio, { kind: 'temporal', stream: input, dims: [1, channels, null], axis: 2, dtype: FLOAT });
    if (used.has(this.io.length)) this.g.input(this.io.length, 'int64', [1]);
    this.values.set(this.io.length, { kind: 'fixed', dims: [1], axis: -1, dtype: INT64 });
    this.g.input(STREAM_POSITION, 'int64', []);
    this.g.input(STREAM_FINAL, 'int64', [1]);
    for (const init of graph.initializer ?? []) if (used.has(init.name ?? '')) this.g.rawInitializer(init);
    for (const [name, c] of this.consts) this.values.set(name, { kind: 'fixed', dims: c.dims, axis: -1, dtype: c.dataType });
    for (const node of nodes) this.node(node);

    const out = this.values.get(this.io.output);
    if (out?.kind !== 'temporal' || out.dims?.length !== 3 || out.axis !== 1) throw new Unsupported(`${this.io.output} is not [batch, time, classes]`);
    this.g.op('Slice', [this.renamed(this.io.output), this.int(0), out.stream.count, this.int(1)], {}, this.io.output);
    this.g.output(this.io.output, 'float', [1, 'frames', out.dims[2] ?? 'classes']);
    for (const c of this.caches)
      this.g.output(
        c.output,
        'float',
        c.dims.map((d, i) => (i === c.axis ? `${c.input}_frames` : d)),
      );
    const bytes = this.g.toBytes({ opsetImport: this.model.opsetImport ?? [], irVersion: Number(this.model.irVersion ?? 8) });
    return { bytes, caches: this.caches, usesLength: used.has(this.io.length), lookahead: out.stream.lookahead };
  }

  private node(node: NodeProto): void {
    if (node.domain && node.domain !== 'ai.onnx') throw new Unsupported(`operator ${node.domain}.${node.opType}`);
    const op = node.opType ?? '';
    const names = (node.input ?? []).filter(Boolean);
    const ins = names.map((n) => this.values.get(n) ?? this.fail(`value ${n} has no known producer`));
    const fixedOnly = ins.every((v) => v.kind === 'fixed');
    if (op === 'Constant' || fixedOnly) {
      this.g.rawNode(node);
      if (op !== 'Constant') {
        const shape = isPerFrameOp(op) ? perFrameShape(node, ins as Shape[], (n) => (n ? this.consts.get(n) : undefined), this.opset) : 'unknown';
        const result = typeof shape === 'string' ? { dims: null, axis: -1, dtype: 0 } : shape;
        for (const o of node.output ?? []) this.values.set(o, { kind: 'fixed', ...result });
      }
      return;
    }
    const x = ins[0]!;
    if (op === 'Shape' && x.kind === 'temporal' && x.stream.exact && !node.attribute?.length) return this.emit(node, { kind: 'shapeOf', of: x });
    if (op === 'Gather' && x.kind === 'shapeOf') {
      const index = this.consts.get(names[1]!)?.values();
      if (index?.length !== 1) throw new Unsupported('a Gather of the audio shape with a non-constant index');
      const at = index[0]! < 0 ? index[0]! + 3 : index[0]!;
      if (at === x.of.axis) return this.emit(node, { kind: 'timeLength', stream: x.of.stream });
      return this.emit(node, { kind: 'fixed', dims: null, axis: -1, dtype: INT64 });
    }
    if (op === 'Cast' && x.kind === 'timeLength') return this.emit(node, x);
    if (op === 'Range' && ins[1]?.kind === 'timeLength') return this.positions(node, names, ins[1].stream);
    if (ins.some((v) => v.kind === 'shapeOf' || v.kind === 'timeLength')) throw new Unsupported(`${op} of the audio's shape`);
    if ((op === 'Conv' || op === 'AveragePool') && x.kind === 'temporal') return this.extent(node, names, x, ins);
    if (!isPerFrameOp(op)) throw new Unsupported(`operator ${op} on the time axis`);
    this.perFrame(node, names, ins as (Temporal | (Shape & { kind: 'fixed' }))[]);
  }

  private perFrame(node: NodeProto, names: string[], ins: (Temporal | (Shape & { kind: 'fixed' }))[]): void {
    const streams = new Set(ins.flatMap((v) => (v.kind === 'temporal' ? [v.stream] : [])));
    let stream = [...streams][0]!;
    let inputs = names.map((n) => this.renamed(n));
    if (streams.size > 1) ({ stream, inputs } = this.align(names, ins));
    const shape = perFrameShape(node, ins, (n) => (n ? this.consts.get(n) : undefined), this.opset);
    if (typeof shape === 'string') throw new Unsupported(shape);
    this.emit({ ...node, input: (node.input ?? []).map((n) => (n ? inputs[names.indexOf(n)]! : n)) }, { kind: 'temporal', stream, ...shape });
  }

  /** Buffers each temporal input of an op reading several streams; the op runs on the frames all have reached. */
  private align(names: string[], ins: (Temporal | (Shape & { kind: 'fixed' }))[]): { stream: Stream; inputs: string[] } {
    const buffered = names.map((name, i) => {
      const v = ins[i]!;
      if (v.kind !== 'temporal') return null;
      if (v.dtype !== FLOAT || !v.dims || v.dims.some((d, a) => d === null && a !== v.axis))
        throw new Unsupported('a multi-stream op on non-float or unknown-shape values');
      const cache = this.cache(
        v.dims.map((d, a) => (a === v.axis ? 0 : d!)),
        v.axis,
      );
      const joined = this.g.op('Concat', [cache.input, this.real(name, v)], { axis: { i: v.axis } });
      return { v, cache, joined, length: this.timeLength(joined, v.axis) };
    });
    const live = buffered.filter((b) => b !== null);
    const count =
      live.length === 1
        ? live[0]!.length
        : this.g.op(
            'Min',
            live.map((b) => b.length),
          );
    const guarded = this.g.op('Max', [count, this.int(1)]);
    const inputs = names.map((name, i) => {
      const b = buffered[i];
      if (!b) return this.renamed(name);
      const rank = b.v.dims!.length;
      this.g.op('Slice', [b.joined, count, this.int(BIG), this.int(b.v.axis)], {}, b.cache.output);
      const padded = this.padEnd(b.joined, rank, b.v.axis, this.g.op('Max', [this.g.op('Sub', [this.int(1), b.length]), this.int(0)]));
      return this.g.op('Slice', [padded, this.int(0), guarded, this.int(b.v.axis)]);
    });
    const streams = live.map((b) => b.v.stream);
    return { stream: { count, exact: false, stride: streams[0]!.stride, lookahead: Math.max(...streams.map((t) => t.lookahead)) }, inputs };
  }

  /** Conv / AveragePool along time: cached input, unpadded op, the end padding at the final step. */
  private extent(node: NodeProto, names: string[], x: Temporal, ins: Value[]): void {
    const op = node.opType!;
    if (x.dims?.length !== 3 || x.axis !== 2) throw new Unsupported(`${op} whose input is not [batch, channels, time]`);
    const weight = op === 'Conv' ? this.consts.get(names[1]!) : undefined;
    if (op === 'Conv' && (!weight || ins.slice(1).some((v) => v.kind !== 'fixed'))) throw new Unsupported('Conv with non-constant weights');
    const kernel = attrInts(node, 'kernel_shape') ?? weight?.dims.slice(2) ?? [];
    if (kernel.length !== 1) throw new Unsupported(`${op} that is not 1-D`);
    const k = kernel[0]!;
    const s = attrInts(node, 'strides')?.[0] ?? 1;
    const d = attrInts(node, 'dilations')?.[0] ?? 1;
    const autoPad = attrString(node, 'auto_pad') ?? 'NOTSET';
    if (autoPad !== 'NOTSET' && autoPad !== 'VALID') throw new Unsupported(`${op} with auto_pad ${autoPad}`);
    const [pb, pe] = autoPad === 'VALID' ? [0, 0] : (attrInts(node, 'pads') ?? [0, 0]);
    const excludePad = op === 'AveragePool' && attrInt(node, 'count_include_pad', 0) === 0;
    if (op === 'AveragePool' && (attrInt(node, 'ceil_mode', 0) || d !== 1)) throw new Unsupported('AveragePool with ceil_mode or dilations');
    const channels = x.dims[1];
    const outShape: Shape = { dims: [1, op === 'Conv' ? weight!.dims[0]! : (channels ?? null), null], axis: 2, dtype: FLOAT };
    const span = (k - 1) * d;
    if (span === 0 && s === 1 && !pb && !pe) return this.emit(node, { kind: 'temporal', stream: x.stream, ...outShape });
    if (s > span + 1) throw new Unsupported(`${op} whose stride is longer than its kernel`);
    if (excludePad && pb) throw new Unsupported('AveragePool that excludes a left padding from its counts');
    if (typeof channels !== 'number') throw new Unsupported(`${op} input with an unknown number of channels`);

    const cache = this.cache([1, channels, pb!], 2);
    const joined = this.g.op('Concat', [cache.input, this.real(names[0]!, x)], { axis: { i: 2 } });
    const length = this.timeLength(joined, 2);
    const endPad = this.memoOp(`endpad:${pe}`, () => this.g.op('Mul', [STREAM_FINAL, this.int(pe!)]));
    // Short chunks are padded up to one window so the op never sees too little input; the extra outputs are not counted.
    const padAmount = this.g.op('Max', [endPad, this.g.op('Sub', [this.int(span + 1), length])]);
    const padded = this.padEnd(joined, 3, 2, padAmount);
    const attrs = (node.attribute ?? []).filter((a) => a.name !== 'pads' && a.name !== 'auto_pad');
    const output = node.output![0]!;
    const core = excludePad ? `${output}/sum` : output;
    this.g.rawNode({
      ...node,
      input: [padded, ...names.slice(1).map((n) => this.renamed(n))],
      output: [core],
      attribute: [...attrs, { name: 'pads', type: onnxProto.onnx.AttributeProto.AttributeType.INTS, ints: [0, 0] }],
    });
    if (excludePad) {
      // Counts exclude the end padding: divide by the mean of an indicator of real frames over each window.
      const ones = this.g.op('ConstantOfShape', [this.g.op('Concat', [this.int(1), this.int(channels), length], { axis: { i: 0 } })], {
        value: { t: { type: 'float', dims: [1], data: [1] } },
      });
      const share = this.g.op(
        'AveragePool',
        [this.padEnd(ones, 3, 2, padAmount)],
        Object.fromEntries(attrs.filter((a) => a.name === 'kernel_shape' || a.name === 'strides').map((a) => [a.name!, { ints: a.ints!.map(Number) } as Attr])),
      );
      this.g.op('Div', [core, this.g.op('Max', [share, this.g.floats([1e-30])])], {}, output);
    }
    // Outputs whose window lies inside [cache | chunk | end padding]: floor((length + endPad − span − 1) / s) + 1.
    const reach = this.g.op('Sub', [this.g.op('Add', [length, endPad]), this.int(span + 1 - s)]);
    const count = this.g.op('Div', [this.g.op('Max', [reach, this.int(0)]), this.int(s)]);
    this.g.op('Slice', [joined, this.g.op('Mul', [count, this.int(s)]), this.int(BIG), this.int(2)], {}, cache.output);
    const { stride, lookahead } = x.stream;
    this.values.set(output, {
      kind: 'temporal',
      stream: { count, exact: false, stride: stride * s, lookahead: lookahead + (span - pb!) * stride },
      ...outShape,
    });
  }

  /** The mask's `Range(0, T, 1)` over input frames, made absolute: `Range(p, p + T, 1)`. */
  private positions(node: NodeProto, names: string[], stream: Stream): void {
    const start = this.consts.get(names[0]!);
    const delta = this.consts.get(names[2]!);
    if (start?.values()[0] !== 0 || delta?.values()[0] !== 1) throw new Unsupported('a Range over the audio that does not count from 0 by 1');
    const p = this.memoOp(`position:${start.dataType}`, () => this.g.op('Cast', [STREAM_POSITION], { to: { i: start.dataType } }));
    const from = this.g.op('Add', [this.renamed(names[0]!), p]);
    const to = this.g.op('Add', [this.renamed(names[1]!), p]);
    this.g.op('Range', [from, to, this.renamed(names[2]!)], {}, node.output![0]!);
    this.values.set(node.output![0]!, { kind: 'temporal', stream, dims: [null], axis: 0, dtype: start.dataType });
  }

  private emit(node: NodeProto, value: Value): void {
    this.g.rawNode({ ...node, output: (node.output ?? []).map((o) => (o === this.io.output ? `${o}/chunk` : o)) });
    this.values.set(node.output![0]!, value);
  }

  private renamed(name: string): string {
    return name === this.io.output ? `${name}/chunk` : name;
  }

  /** The real frames of a temporal value (its guard frames cut off). */
  private real(name: string, v: Temporal): string {
    return v.stream.exact ? this.renamed(name) : this.g.op('Slice', [this.renamed(name), this.int(0), v.stream.count, this.int(v.axis)]);
  }

  private timeLength(name: string, axis: number): string {
    return this.g.op('Gather', [this.g.op('Shape', [name]), this.int(axis)], { axis: { i: 0 } });
  }

  private padEnd(name: string, rank: number, axis: number, amount: string): string {
    const before = this.int64s(new Array(rank + axis).fill(0));
    const after = rank - axis - 1 ? [this.int64s(new Array(rank - axis - 1).fill(0))] : [];
    return this.g.op('Pad', [name, this.g.op('Concat', [before, amount, ...after], { axis: { i: 0 } })]);
  }

  private cache(dims: number[], axis: number): StreamCache {
    const index = this.caches.length;
    const cache = { input: `stream_cache_${index}`, output: `stream_cache_${index}_next`, dims, axis };
    this.g.input(
      cache.input,
      'float',
      dims.map((d, i) => (i === axis ? `${cache.input}_frames` : d)),
    );
    this.caches.push(cache);
    return cache;
  }

  private int(value: number): string {
    return this.int64s([value]);
  }

  private int64s(values: number[]): string {
    return this.memoOp(`ints:${values.join(',')}`, () => this.g.int64s(values));
  }

  private memoOp(key: string, make: () => string): string {
    let name = this.memo.get(key);
    if (!name) this.memo.set(key, (name = make()));
    return name;
  }

  private fail(message: string): never {
    throw new Unsupported(message);
  }
}
