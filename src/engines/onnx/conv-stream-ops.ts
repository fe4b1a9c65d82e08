/**
 * Which ONNX operators act on each time step on its own ("per-frame"), and where the time axis of their
 * output lies: the rules conv-streaming.ts uses to carry a model's graph over to chunks of time. A value
 * is either temporal (it has a time axis, whose length varies with the chunk) or fixed (weights, constants,
 * what the `length` input gives). An operator is per-frame when no output step reads another step of a
 * temporal input: elementwise maths with broadcasting, transposes, reductions and softmaxes over other
 * axes, matrix products over other axes, concatenation along other axes, batch and layer norms, 1×1 convs.
 *
 * Dims are tracked with batch 1 (the step graph runs one stream); `null` is unknown, or the time axis.
 */
import { attrInt, attrInts, type ConstTensor, type NodeProto } from './graph-reader.js';

export type Dims = (number | null)[];

/** The facts about a value that the rules need: its dims (null: rank unknown), time axis (−1: none). */
export interface Shape {
  dims: Dims | null;
  axis: number;
  dtype: number;
}

export const FLOAT = 1;
export const INT64 = 7;
export const BOOL = 9;

const UNARY = new Set([
  'Relu',
  'LeakyRelu',
  'Elu',
  'Selu',
  'Sigmoid',
  'Tanh',
  'Exp',
  'Log',
  'Abs',
  'Neg',
  'Sqrt',
  'Reciprocal',
  'Floor',
  'Ceil',
  'Round',
  'Erf',
  'Softplus',
  'Softsign',
  'HardSigmoid',
  'HardSwish',
  'Identity',
  'Dropout',
  'Sign',
  'Sin',
  'Cos',
  'Gelu',
  'Mish',
  'Clip',
  'Cast',
  'Not',
  'IsNaN',
  'IsInf',
  'BatchNormalization',
]);
const BROADCAST = new Set([
  'Add',
  'Sub',
  'Mul',
  'Div',
  'Pow',
  'Max',
  'Min',
  'Sum',
  'Mean',
  'PRelu',
  'Where',
  'And',
  'Or',
  'Xor',
  'Less',
  'Greater',
  'Equal',
  'LessOrEqual',
  'GreaterOrEqual',
]);
const COMPARISON = new Set(['Less', 'Greater', 'Equal', 'LessOrEqual', 'GreaterOrEqual', 'And', 'Or', 'Xor', 'Not', 'IsNaN', 'IsInf']);
const REDUCE = new Set([
  'ReduceSum',
  'ReduceMean',
  'ReduceMax',
  'ReduceMin',
  'ReduceProd',
  'ReduceSumSquare',
  'ReduceL1',
  'ReduceL2',
  'ReduceLogSum',
  'ReduceLogSumExp',
]);
/** Reductions whose axes became an input, by the opset that moved them (ReduceSum at 13, the others at 18). */
const axesInputSince = (op: string) => (op === 'ReduceSum' ? 13 : 18);

/** Ops whose extra inputs are not data (Clip's bounds, BatchNormalization's statistics) are still per-frame. */
export function isPerFrameOp(op: string): boolean {
  return (
    UNARY.has(op) ||
    BROADCAST.has(op) ||
    REDUCE.has(op) ||
    ['Transpose', 'Unsqueeze', 'Squeeze', 'Softmax', 'LogSoftmax', 'MatMul', 'Concat', 'LayerNormalization'].includes(op)
  );
}

const norm = (axis: number, rank: number) => (axis < 0 ? axis + rank : axis);

/** A const input's values (axes, perm), or undefined when the input is absent or not constant. */
type ConstOf = (name: string | undefined) => ConstTensor | undefined;

function axesOf(node: NodeProto, consts: ConstOf, opset: number, since: number): number[] | undefined {
  if (opset >= since) return consts(node.input?.[1])?.values();
  return attrInts(node, 'axes');
}

function broadcast(inputs: Shape[]): Shape | string {
  if (inputs.some((s) => s.dims === null)) return 'an operand of unknown rank meets a temporal value';
  const rank = Math.max(...inputs.map((s) => s.dims!.length));
  let axis = -1;
  for (const s of inputs) {
    if (s.axis < 0) continue;
    const at = s.axis + rank - s.dims!.length;
    if (axis >= 0 && axis !== at) return 'temporal operands with different time axes';
    axis = at;
  }
  const dims: Dims = [];
  for (let p = 0; p < rank; p++) {
    const here = inputs.map((s) => ({ s, d: s.dims![p - (rank - s.dims!.length)] })).filter((e) => e.d !== undefined || p === axis);
    if (p === axis) {
      // A fixed operand must not span the time axis (it would need as many steps as the whole turn).
      if (here.some((e) => e.s.axis < 0 && e.d !== undefined && e.d !== 1)) return 'a fixed operand spans the time axis';
      dims.push(null);
      continue;
    }
    const known = here.map((e) => e.d);
    dims.push(known.some((d) => d === null || d === undefined) ? null : Math.max(...(known as number[])));
  }
  return { dims, axis, dtype: inputs.find((s) => s.axis >= 0)?.dtype ?? inputs[0]!.dtype };
}

/**
 * The output shape of a per-frame op whose temporal inputs are aligned (same chunk of time), or the reason
 * the op is not per-frame here. Also used for fixed values (no input has a time axis) to track their dims.
 */
export function perFrameShape(node: NodeProto, inputs: Shape[], consts: ConstOf, opset: number): Shape | string {
  const op = node.opType ?? '';
  const x = inputs[0]!;
  const rank = x.dims?.length ?? -1;
  const temporal = inputs.filter((s) => s.axis >= 0);
  if (UNARY.has(op)) {
    if (inputs.slice(1).some((s) => s.axis >= 0)) return `${op} with a temporal parameter`;
    if (op === 'BatchNormalization' && x.axis === 1) return 'BatchNormalization over the time axis';
    if ((op === 'Dropout' || op === 'BatchNormalization') && (node.output ?? []).slice(1).some(Boolean)) return `${op} with training outputs`;
    const dtype = op === 'Cast' ? attrInt(node, 'to', FLOAT) : COMPARISON.has(op) ? BOOL : x.dtype;
    return { ...x, dtype };
  }
  if (BROADCAST.has(op)) {
    const shape = broadcast(inputs);
    if (typeof shape === 'string') return shape;
    if (COMPARISON.has(op)) return { ...shape, dtype: BOOL };
    if (op === 'Where') return { ...shape, dtype: (inputs[1]!.axis >= 0 ? inputs[1]! : inputs[2]!).dtype };
    return shape;
  }
  if (x.dims === null) return `${op} on a value of unknown rank`;
  const dims = x.dims;
  if (op === 'Transpose') {
    const perm = attrInts(node, 'perm') ?? dims.map((_, i) => rank - 1 - i);
    return { dims: perm.map((p) => dims[p]!), axis: x.axis < 0 ? -1 : perm.indexOf(x.axis), dtype: x.dtype };
  }
  if (op === 'Unsqueeze') {
    const axes = axesOf(node, consts, opset, 13);
    if (!axes) return 'Unsqueeze with axes that are not constant';
    const out = dims.length + axes.length;
    const at = new Set(axes.map((a) => norm(a, out)));
    const result: Dims = [];
    let src = 0;
    let axis = -1;
    for (let p = 0; p < out; p++) {
      if (at.has(p)) result.push(1);
      else {
        if (src === x.axis) axis = p;
        result.push(dims[src++]!);
      }
    }
    return { dims: result, axis, dtype: x.dtype };
  }
  if (op === 'Squeeze') {
    const given = axesOf(node, consts, opset, 13);
    const axes = new Set((given ?? dims.map((d, i) => (d === 1 ? i : -1)).filter((i) => i >= 0)).map((a) => norm(a, rank)));
    if (!given && dims.some((d, i) => d === null && i !== x.axis)) return 'Squeeze without axes on unknown dims';
    if (axes.has(x.axis)) return 'Squeeze of the time axis';
    const kept = dims.map((_, i) => i).filter((i) => !axes.has(i));
    return { dims: kept.map((i) => dims[i]!), axis: x.axis < 0 ? -1 : kept.indexOf(x.axis), dtype: x.dtype };
  }
  if (REDUCE.has(op)) {
    const axes = axesOf(node, consts, opset, axesInputSince(op));
    if (!axes || axes.length === 0) return `${op} over every axis`;
    const over = new Set(axes.map((a) => norm(a, rank)));
    if (over.has(x.axis)) return `${op} over the time axis`;
    if (attrInt(node, 'keepdims', 1)) return { dims: dims.map((d, i) => (over.has(i) ? 1 : d)), axis: x.axis, dtype: x.dtype };
    const kept = dims.map((_, i) => i).filter((i) => !over.has(i));
    return { dims: kept.map((i) => dims[i]!), axis: x.axis < 0 ? -1 : kept.indexOf(x.axis), dtype: x.dtype };
  }
  if (op === 'Softmax' || op === 'LogSoftmax') {
    const axis = norm(attrInt(node, 'axis', opset >= 13 ? -1 : 1), rank);
    // Before opset 13 the input is flattened to 2-D at `axis`: the time axis must stay in the rows.
    if (opset < 13 ? x.axis >= axis : x.axis === axis) return `${op} across the time axis`;
    return x;
  }
  if (op === 'LayerNormalization') {
    if ((node.output ?? []).slice(1).some(Boolean)) return 'LayerNormalization with statistics outputs';
    if (x.axis >= norm(attrInt(node, 'axis', -1), rank)) return 'LayerNormalization across the time axis';
    return x;
  }
  if (op === 'Concat') {
    const axis = norm(attrInt(node, 'axis', 0), rank);
    if (axis === x.axis) return 'Concat along the time axis';
    if (temporal.length !== inputs.length) return 'Concat of temporal and fixed values';
    const along = inputs.map((s) => s.dims?.[axis]);
    return {
      dims: dims.map((d, i) => (i === axis ? (along.every((v) => typeof v === 'number') ? (along as number[]).reduce((a, b) => a + b, 0) : null) : d)),
      axis: x.axis,
      dtype: x.dtype,
    };
  }
  if (op === 'MatMul') {
    const [a, b] = inputs as [Shape, Shape];
    if (a.dims === null || b.dims === null || a.dims.length < 2 || b.dims.length < 2) return 'MatMul of vectors or of unknown ranks';
    if (a.axis >= 0 && b.axis >= 0) return 'MatMul of two temporal values';
    // The contracted axes (A's last, B's second last) must not be time; time stays a row (A) or column (B).
    if (a.axis === a.dims.length - 1 || b.axis === b.dims.length - 2) return 'MatMul contracting the time axis';
    const out = Math.max(a.dims.length, b.dims.length);
    const batch = broadcast([
      { ...a, dims: a.dims.slice(0, -2), axis: a.axis < a.dims.length - 2 ? a.axis : -1 },
      { ...b, dims: b.dims.slice(0, -2), axis: b.axis < b.dims.length - 2 ? b.axis : -1 },
    ]);
    if (typeof batch === 'string') return batch;
    const axis = a.axis >= 0 ? (a.axis === a.dims.length - 2 ? out - 2 : batch.axis) : b.axis === b.dims.length - 1 ? out - 1 : batch.axis;
    return { dims: [...batch.dims!, a.dims[a.dims.length - 2]!, b.dims[b.dims.length - 1]!], axis, dtype: a.dtype };
  }
  return `operator ${op}`;
}
