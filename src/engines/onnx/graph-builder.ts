/**
 * A small builder for ONNX graphs on top of onnx-proto (protobufjs bindings of onnx.proto): declare
 * inputs/outputs with symbolic dimensions, add initializers and nodes, serialize to bytes that onnxruntime
 * loads. The demo model pack is generated with it (no Python), and runners build small helper graphs
 * with it (e.g. feature extraction that runs in onnxruntime's native kernels).
 */
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

export type ElemType = 'float' | 'float16' | 'int64' | 'int32' | 'bool';
export type Dim = number | string;

const ELEM: Record<ElemType, number> = {
  float: onnx.TensorProto.DataType.FLOAT,
  float16: onnx.TensorProto.DataType.FLOAT16,
  int64: onnx.TensorProto.DataType.INT64,
  int32: onnx.TensorProto.DataType.INT32,
  bool: onnx.TensorProto.DataType.BOOL,
};

/** Attribute values are tagged so ints and floats are never confused. */
export type Attr =
  { i: number } | { f: number } | { ints: number[] } | { floats: number[] } | { s: string } | { t: TensorSpec } | { g: onnxProto.onnx.IGraphProto };

export interface TensorSpec {
  type: ElemType;
  dims: number[];
  data: Float32Array | number[] | BigInt64Array | Int32Array | Uint8Array;
}

function tensorProto(name: string, spec: TensorSpec): onnxProto.onnx.ITensorProto {
  const count = spec.dims.reduce((a, b) => a * b, 1);
  if (spec.data.length !== count) throw new Error(`Tensor ${name}: ${spec.data.length} values for dims [${spec.dims}]`);
  // raw_data little-endian bytes: compact, and exact for every type.
  let raw: Uint8Array;
  if (spec.type === 'float') raw = new Uint8Array(Float32Array.from(spec.data as ArrayLike<number>).buffer);
  else if (spec.type === 'int64') {
    const values = spec.data instanceof BigInt64Array ? spec.data : BigInt64Array.from(Array.from(spec.data as ArrayLike<number>, (v) => BigInt(v)));
    raw = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  } else if (spec.type === 'int32') raw = new Uint8Array(Int32Array.from(spec.data as ArrayLike<number>).buffer);
  else if (spec.type === 'bool') raw = Uint8Array.from(spec.data as ArrayLike<number>, (v) => (v ? 1 : 0));
  else throw new Error(`Tensor ${name}: initializers of type ${spec.type} are not supported by the builder`);
  return { name, dims: spec.dims, dataType: ELEM[spec.type], rawData: raw };
}

function valueInfo(name: string, type: ElemType, dims: Dim[]): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType: ELEM[type],
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, value: Attr): onnxProto.onnx.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if ('i' in value) return { name, type: T.INT, i: value.i };
  if ('f' in value) return { name, type: T.FLOAT, f: value.f };
  if ('ints' in value) return { name, type: T.INTS, ints: value.ints };
  if ('floats' in value) return { name, type: T.FLOATS, floats: value.floats };
  if ('s' in value) return { name, type: T.STRING, s: new TextEncoder().encode(value.s) };
  if ('t' in value) return { name, type: T.TENSOR, t: tensorProto(name, value.t) };
  return { name, type: T.GRAPH, g: value.g };
}

export class GraphBuilder {
  private readonly nodes: onnxProto.onnx.INodeProto[] = [];
  private readonly inputs: onnxProto.onnx.IValueInfoProto[] = [];
  private readonly outputs: onnxProto.onnx.IValueInfoProto[] = [];
  private readonly initializers: onnxProto.onnx.ITensorProto[] = [];
  private counter = 0;

  /** `prefix` keeps generated names apart from those of nodes copied in from another graph. */
  constructor(
    readonly name: string,
    private readonly prefix = '',
  ) {}

  input(name: string, type: ElemType, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, type, dims));
    return name;
  }

  output(name: string, type: ElemType, dims: Dim[]): string {
    this.outputs.push(valueInfo(name, type, dims));
    return name;
  }

  /** Adds a constant tensor; returns its name. */
  constant(spec: TensorSpec, name = this.fresh('const')): string {
    this.initializers.push(tensorProto(name, spec));
    return name;
  }

  floats(values: number[] | Float32Array, dims: number[] = [values.length]): string {
    return this.constant({ type: 'float', dims, data: values });
  }

  int64s(values: number[], dims: number[] = [values.length]): string {
    return this.constant({ type: 'int64', dims, data: values });
  }

  /** Adds a node; returns its output names (auto-named unless given). */
  node(op: string, inputs: string[], attrs: Record<string, Attr> = {}, outputs: string[] | number = 1): string[] {
    const names = typeof outputs === 'number' ? Array.from({ length: outputs }, () => this.fresh(op)) : outputs;
    this.nodes.push({
      opType: op,
      input: inputs,
      output: names,
      name: this.fresh(`n_${op}`),
      attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
    });
    return names;
  }

  /** Adds a node as it is (a node copied from another graph, attributes and all). */
  rawNode(node: onnxProto.onnx.INodeProto): void {
    this.nodes.push(node);
  }

  /** Adds an initializer as it is (weights copied from another graph, without re-encoding them). */
  rawInitializer(tensor: onnxProto.onnx.ITensorProto): void {
    this.initializers.push(tensor);
  }

  /** Single-output shorthand. */
  op(op: string, inputs: string[], attrs: Record<string, Attr> = {}, output?: string): string {
    return this.node(op, inputs, attrs, output ? [output] : 1)[0]!;
  }

  /** The graph alone (for If/Loop bodies). */
  graph(): onnxProto.onnx.IGraphProto {
    return { name: this.name, node: this.nodes, input: this.inputs, output: this.outputs, initializer: this.initializers };
  }

  /** Serialized model; metadata goes to metadata_props (sherpa-onnx reads sample_rate etc. from there). */
  toBytes(
    options: { opset?: number; metadata?: Record<string, string>; opsetImport?: onnxProto.onnx.IOperatorSetIdProto[]; irVersion?: number } = {},
  ): Uint8Array {
    const model = onnx.ModelProto.create({
      irVersion: options.irVersion ?? 8,
      producerName: 'kuma-demo-pack',
      producerVersion: '1',
      opsetImport: options.opsetImport ?? [{ domain: '', version: options.opset ?? 17 }],
      graph: this.graph(),
      metadataProps: Object.entries(options.metadata ?? {}).map(([key, value]) => ({ key, value })),
    });
    return onnx.ModelProto.encode(model).finish();
  }

  private fresh(prefix: string): string {
    return `${this.prefix}${prefix}_${this.counter++}`;
  }
}
