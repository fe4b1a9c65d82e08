/**
 * Reading a decoded ONNX graph (onnx-proto): node attributes, and the values of constant tensors
 * (initializers and Constant nodes) — what a graph transform needs to know about a model it rewrites.
 * protobufjs decodes int64 fields as Long objects; everything here hands back plain numbers.
 */
import onnxProto from 'onnx-proto';

export type NodeProto = onnxProto.onnx.INodeProto;
export type TensorProto = onnxProto.onnx.ITensorProto;
export type GraphProto = onnxProto.onnx.IGraphProto;

const DataType = onnxProto.onnx.TensorProto.DataType;

/** A protobuf int64 (Long or number) as a number. */
export function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (value && typeof (value as { toNumber?: unknown }).toNumber === 'function') return (value as { toNumber(): number }).toNumber();
  return Number(value);
}

export function attribute(node: NodeProto, name: string): onnxProto.onnx.IAttributeProto | undefined {
  return node.attribute?.find((a) => a.name === name);
}

export function attrInt(node: NodeProto, name: string, fallback: number): number {
  const a = attribute(node, name);
  return a && a.i !== undefined && a.i !== null ? toNumber(a.i) : fallback;
}

export function attrInts(node: NodeProto, name: string): number[] | undefined {
  const a = attribute(node, name);
  return a?.ints && a.ints.length ? a.ints.map(toNumber) : undefined;
}

export function attrString(node: NodeProto, name: string): string | undefined {
  const a = attribute(node, name);
  return a?.s && a.s.length ? new TextDecoder().decode(a.s) : undefined;
}

/** A constant tensor: its element type (onnx DataType), dims and, for the small ones read here, values. */
export interface ConstTensor {
  dataType: number;
  dims: number[];
  values: () => number[];
}

function tensorValues(t: TensorProto): number[] {
  const raw = t.rawData && t.rawData.length ? t.rawData : null;
  const type = t.dataType ?? 0;
  if (raw) {
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const out: number[] = [];
    if (type === DataType.INT64) for (let i = 0; i < raw.byteLength; i += 8) out.push(Number(view.getBigInt64(i, true)));
    else if (type === DataType.INT32) for (let i = 0; i < raw.byteLength; i += 4) out.push(view.getInt32(i, true));
    else if (type === DataType.FLOAT) for (let i = 0; i < raw.byteLength; i += 4) out.push(view.getFloat32(i, true));
    else if (type === DataType.DOUBLE) for (let i = 0; i < raw.byteLength; i += 8) out.push(view.getFloat64(i, true));
    else throw new Error(`cannot read constant values of ONNX data type ${type}`);
    return out;
  }
  if (t.int64Data?.length) return t.int64Data.map(toNumber);
  if (t.int32Data?.length) return t.int32Data.slice();
  if (t.floatData?.length) return t.floatData.slice();
  if (t.doubleData?.length) return t.doubleData.slice();
  return [];
}

function fromTensor(t: TensorProto): ConstTensor {
  return { dataType: t.dataType ?? 0, dims: (t.dims ?? []).map(toNumber), values: () => tensorValues(t) };
}

/** The graph's constants by value name: initializers and the outputs of Constant nodes. */
export function constants(graph: GraphProto): Map<string, ConstTensor> {
  const out = new Map<string, ConstTensor>();
  for (const init of graph.initializer ?? []) out.set(init.name ?? '', fromTensor(init));
  for (const node of graph.node ?? []) {
    if (node.opType !== 'Constant' || !node.output?.[0]) continue;
    const a = node.attribute?.[0];
    if (!a) continue;
    if (a.name === 'value' && a.t) out.set(node.output[0], fromTensor(a.t));
    else if (a.name === 'value_int') out.set(node.output[0], { dataType: DataType.INT64, dims: [], values: () => [toNumber(a.i)] });
    else if (a.name === 'value_ints')
      out.set(node.output[0], { dataType: DataType.INT64, dims: [a.ints?.length ?? 0], values: () => (a.ints ?? []).map(toNumber) });
    else if (a.name === 'value_float') out.set(node.output[0], { dataType: DataType.FLOAT, dims: [], values: () => [a.f ?? 0] });
    else if (a.name === 'value_floats')
      out.set(node.output[0], { dataType: DataType.FLOAT, dims: [a.floats?.length ?? 0], values: () => (a.floats ?? []).slice() });
  }
  return out;
}

/** The nodes whose outputs `outputs` depend on, in graph order (a valid ONNX graph is sorted). */
export function neededNodes(graph: GraphProto, outputs: string[]): NodeProto[] {
  const nodes = graph.node ?? [];
  const producer = new Map<string, number>();
  nodes.forEach((n, i) => n.output?.forEach((o) => producer.set(o, i)));
  const needed = new Set<number>();
  const stack = [...outputs];
  while (stack.length) {
    const i = producer.get(stack.pop()!);
    if (i === undefined || needed.has(i)) continue;
    needed.add(i);
    for (const input of nodes[i]!.input ?? []) if (input) stack.push(input);
  }
  return nodes.filter((_, i) => needed.has(i));
}

/** The opset version of the default ONNX domain. */
export function defaultOpset(model: onnxProto.onnx.IModelProto): number {
  const entry = model.opsetImport?.find((o) => !o.domain || o.domain === 'ai.onnx');
  return entry ? toNumber(entry.version) : 0;
}
