/**
 * The ONNX graph shared by the three demo VITS exports (HF, sherpa-onnx, Piper): it speaks the demo voice
 * with exactly the inputs and outputs of the real layout it imitates. A real VITS predicts a duration per
 * token and decodes audio for it; here both are table look-ups, so tests can predict every sample:
 *
 *   rows  = Gather(waveTable, ids)           [1, L, W]   one pre-rendered row per token id (W = symbol length)
 *   durs  = Gather(durationTable, ids)       [1, L]      samples each token lasts, zeroed past the valid length
 *   (length scale s) rows = Resize(rows, width round(W·s), linear), durs = round(durs·s)
 *   (speaker)        rows = rows · gain[sid]
 *   wave  = Compress(rows, arange(W') < durs)             the first `dur` samples of each row, concatenated
 *
 * Batch size 1 only (the Compress flattens the batch), which is how Kuma calls every VITS export.
 */
import onnxProto from 'onnx-proto';
import { GraphBuilder, type Dim, type ElemType } from '../../src/engines/onnx/graph-builder.js';
import { DEMO_GAP_SECONDS, DEMO_SYMBOL_SECONDS, renderSymbol } from './demo-voice.js';

const { DataType } = onnxProto.onnx.TensorProto;

/** What a token id sounds like in the demo voice. */
export type DemoTokenSound =
  | { kind: 'symbol'; index: number } // renderSymbol(index): DEMO_SYMBOL_SECONDS
  | { kind: 'gap' } // silence, DEMO_GAP_SECONDS (the add_blank / pad token)
  | { kind: 'unk' } // silence, DEMO_SYMBOL_SECONDS (an unknown character still takes a slot)
  | { kind: 'none' }; // no audio (Piper's BOS/EOS markers)

export interface VitsGraphSpec {
  name: string;
  sampleRate: number;
  /** Sound of each token id; index = id. */
  sounds: DemoTokenSound[];
  /** Declared in this order, as the real exporter declares them (sherpa-onnx feeds inputs by position). */
  inputs: Array<{ name: string; type: ElemType; dims: Dim[] }>;
  ids: string;
  /** Valid-length input: an attention mask shaped like the ids, or a lengths vector. */
  validLength: { name: string; kind: 'mask' | 'lengths' };
  /** Length scale input (`index` picks an element of a packed scales vector); absent = frozen at 1. */
  lengthScale?: { name: string; index?: number };
  /** Speaker id input and the gain each speaker applies. */
  speaker?: { name: string; gains: number[] };
  /** The waveform output; every dim but the last is 1 at run time. */
  output: { name: string; dims: Dim[] };
  /** HF's secondary output: zeros shaped [1, channels, samples / hop], only its shape is plausible. */
  spectrogram?: { name: string; dims: Dim[]; channels: number; hop: number };
  metadata?: Record<string, string>;
}

/** Sample counts of the demo voice at a rate, computed exactly as `speakDemo` does. */
export function demoLengths(sampleRate: number): { symbol: number; gap: number } {
  return { symbol: Math.round(DEMO_SYMBOL_SECONDS * sampleRate), gap: Math.round(DEMO_GAP_SECONDS * sampleRate) };
}

export function buildVitsGraph(spec: VitsGraphSpec): Uint8Array {
  const g = new GraphBuilder(spec.name);
  for (const input of spec.inputs) g.input(input.name, input.type, input.dims);
  const { symbol, gap } = demoLengths(spec.sampleRate);
  const width = Math.max(symbol, gap);
  const table = new Float32Array(spec.sounds.length * width);
  const durations = spec.sounds.map((sound, id) => {
    if (sound.kind === 'symbol') table.set(renderSymbol(sound.index, spec.sampleRate), id * width);
    return sound.kind === 'symbol' || sound.kind === 'unk' ? symbol : sound.kind === 'gap' ? gap : 0;
  });
  const scalar = (v: number) => g.int64s([v], []);
  const axes = (...v: number[]) => g.int64s(v);

  let rows = g.op('Gather', [g.constant({ type: 'float', dims: [spec.sounds.length, width], data: table }), spec.ids], { axis: { i: 0 } });
  let durs = g.op('Gather', [g.int64s(durations), spec.ids], { axis: { i: 0 } });
  const tokenCount = g.op('Gather', [g.op('Shape', [spec.ids]), scalar(1)], { axis: { i: 0 } });

  // Tokens past the valid length make no sound, as the real model's masks do.
  const valid =
    spec.validLength.kind === 'mask'
      ? g.op('Cast', [spec.validLength.name], { to: { i: DataType.INT64 } })
      : g.op('Cast', [g.op('Less', [g.op('Range', [scalar(0), tokenCount, scalar(1)]), spec.validLength.name])], { to: { i: DataType.INT64 } });
  durs = g.op('Mul', [durs, valid]);

  let rowWidth: string;
  if (spec.lengthScale) {
    // A real VITS multiplies each predicted duration by length_scale; here each row is also resampled
    // (linear, half_pixel) to the scaled width, like playing it slower or faster.
    const source = spec.lengthScale;
    const s = source.index === undefined ? source.name : g.op('Gather', [source.name, g.int64s([source.index])], { axis: { i: 0 } });
    const scaledWidth = g.op('Cast', [g.op('Round', [g.op('Mul', [g.floats([width]), s])])], { to: { i: DataType.INT64 } });
    const sizes = g.op('Concat', [g.int64s([1, 1]), g.op('Unsqueeze', [tokenCount, axes(0)]), scaledWidth], { axis: { i: 0 } });
    rows = g.op('Resize', [g.op('Unsqueeze', [rows, axes(1)]), '', '', sizes], { mode: { s: 'linear' } });
    durs = g.op('Cast', [g.op('Round', [g.op('Mul', [g.op('Cast', [durs], { to: { i: DataType.FLOAT } }), s])])], { to: { i: DataType.INT64 } });
    rowWidth = g.op('Squeeze', [scaledWidth, axes(0)]);
  } else {
    rowWidth = scalar(width);
  }
  if (spec.speaker) rows = g.op('Mul', [rows, g.op('Gather', [g.floats(spec.speaker.gains), spec.speaker.name], { axis: { i: 0 } })]);

  const keep = g.op('Less', [g.op('Range', [scalar(0), rowWidth, scalar(1)]), g.op('Unsqueeze', [durs, axes(-1)])]);
  const flat = (x: string) => g.op('Reshape', [x, g.int64s([-1])]);
  const samples = g.op('Compress', [flat(rows), flat(keep)], { axis: { i: 0 } });
  const outShape = [...spec.output.dims.slice(0, -1).map(() => 1), -1];
  g.op('Reshape', [samples, g.int64s(outShape)], {}, spec.output.name);
  g.output(spec.output.name, 'float', spec.output.dims);

  if (spec.spectrogram) {
    const frames = g.op('Div', [g.op('Shape', [samples]), g.int64s([spec.spectrogram.hop])]);
    const shape = g.op('Concat', [g.int64s([1, spec.spectrogram.channels]), frames], { axis: { i: 0 } });
    g.op('ConstantOfShape', [shape], {}, spec.spectrogram.name);
    g.output(spec.spectrogram.name, 'float', spec.spectrogram.dims);
  }
  return g.toBytes({ opset: 17, metadata: spec.metadata });
}
