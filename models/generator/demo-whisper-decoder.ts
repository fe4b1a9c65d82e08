/**
 * The decoder graphs of the demo Whisper model, in both optimum layouts: `decoder_model_merged.onnx` (an If
 * on `use_cache_branch` over the step-0 and cached computations) or `decoder_model.onnx` +
 * `decoder_with_past_model.onnx`. They write one phrase per speech region between timestamp tokens, reading
 * the history from the self-attention cache and the regions from the cross-attention cache.
 */
import { GraphBuilder } from '../../src/engines/onnx/graph-builder.js';
import {
  BUCKET_FRAMES,
  FLOAT,
  FRAMES,
  HEADS,
  HEAD_DIM,
  INT64,
  LAYERS,
  MAX_REGIONS,
  D_MODEL,
  Scope,
  ioType,
  serialize,
  type GraphVariant,
  type Uint8Tensor,
} from './demo-whisper-graph.js';

/** Logit of the token the model wants, of a sampled alternative reading, and the fall-off per 20 ms away from a wanted timestamp. */
const SHARP = 20;
const ALT = SHARP - 1;
const SLOPE = 2;

export interface DecoderTables {
  vocab: number;
  eot: number;
  /** −1 when the vocabulary has no `<|translate|>`. */
  translate: number;
  noTimestamps: number;
  timestampBegin: number;
  /** Rows: transcribe buckets, then translate buckets; token ids padded with −1. */
  phrases: number[][];
  /** Same shape: the alternative reading of each token (−1: none), chosen only by sampling. */
  alternatives: number[][];
}

const past = (i: number, part: string, kv: string) => `past_key_values.${i}.${part}.${kv}`;
const present = (i: number, part: string, kv: string) => `present.${i}.${part}.${kv}`;
export const PRESENT_NAMES = Array.from({ length: LAYERS }, (_, i) =>
  ['decoder', 'encoder'].flatMap((p) => ['key', 'value'].map((kv) => present(i, p, kv))),
).flat();

/** Table names shared by the decoder's branches (main-graph initializers). */
interface Shared {
  phrases: string;
  alternatives: string;
  lengths: string;
  vocabRange: string;
  timestampIndex: string;
  isTimestamp: string;
}

function sharedTables(s: Scope, t: DecoderTables): Shared {
  return {
    phrases: s.i64(t.phrases.flat()),
    alternatives: s.i64(t.alternatives.flat()),
    lengths: s.f32(t.phrases.map((row) => row.filter((id) => id >= 0).length)),
    vocabRange: s.i64(Array.from({ length: t.vocab }, (_, v) => v)),
    timestampIndex: s.f32(Array.from({ length: t.vocab }, (_, v) => v - t.timestampBegin)),
    isTimestamp: s.f32(Array.from({ length: t.vocab }, (_, v) => (v >= t.timestampBegin && v <= t.timestampBegin + FRAMES ? 1 : 0))),
  };
}

/**
 * The decoder computation: token ids go into the self-attention cache and come back out of it, so every
 * position sees the whole history; the region list comes from the cross-attention cache. For the history
 * up to each position: c timestamps so far, n text tokens since the last one, m text tokens in all, and
 * whether `<|translate|>` / `<|notimestamps|>` were in the prompt. Region k = ⌊c/2⌋: c even → its start
 * timestamp (or `<|endoftext|>` when there is no region k); c odd → word n of its phrase, then its end
 * timestamp. Without timestamps the phrases of all regions follow each other. Returns float32 values.
 */
function decoderBody(s: Scope, t: DecoderTables, sh: Shared, withPast: boolean, v: GraphVariant): Record<string, string> {
  const out: Record<string, string> = {};
  const scalarI = (x: number) => s.i64([x], []);
  const scalarF = (x: number) => s.f32([x], []);
  const ids4 = s.op('Unsqueeze', [s.op('Cast', ['input_ids'], FLOAT), s.i64([1, 3])]);
  const pattern = (feature: number, scale: number) =>
    s.weight(
      Array.from({ length: HEADS * HEAD_DIM }, (_, k) => (k % HEAD_DIM === feature ? scale : 0)),
      [1, HEADS, 1, HEAD_DIM],
    );
  for (let i = 0; i < LAYERS; i++) {
    const key = s.op('Mul', [ids4, pattern(0, i + 1)]);
    const value = s.op('Mul', [ids4, pattern(1, i + 1)]);
    out[present(i, 'decoder', 'key')] = withPast ? s.op('Concat', [s.float(past(i, 'decoder', 'key')), key], { axis: { i: 2 } }) : key;
    out[present(i, 'decoder', 'value')] = withPast ? s.op('Concat', [s.float(past(i, 'decoder', 'value')), value], { axis: { i: 2 } }) : value;
  }
  let encValue: string;
  if (withPast) {
    // optimum's merged decoder returns empty encoder presents on cached steps.
    const empty = s.f32([], [0, HEADS, 1, HEAD_DIM]);
    for (let i = 0; i < LAYERS; i++) for (const kv of ['key', 'value']) out[present(i, 'encoder', kv)] = s.op('Identity', [empty]);
    encValue = s.float(past(LAYERS - 1, 'encoder', 'value'));
  } else {
    const heads = s.op('Reshape', [s.float('encoder_hidden_states'), s.i64([0, 0, HEADS, HEAD_DIM])]);
    const x = s.op('Transpose', [heads], { perm: { ints: [0, 2, 1, 3] } });
    for (let i = 0; i < LAYERS; i++) {
      out[present(i, 'encoder', 'key')] = s.op('Mul', [x, scalarF(i + 1)]);
      out[present(i, 'encoder', 'value')] = s.op('Mul', [x, scalarF(-(i + 1))]);
    }
    encValue = out[present(LAYERS - 1, 'encoder', 'value')]!;
  }
  const feature = (cache: string, f: number, scale: number) => {
    const head0 = s.op('Gather', [cache, scalarI(0)], { axis: { i: 1 } });
    return s.op('Round', [s.op('Div', [s.op('Gather', [head0, scalarI(f)], { axis: { i: 2 } }), scalarF(scale)])]);
  };
  // History: the ids kept in the last layer's value cache, then the new ones.
  const pastLen = withPast ? s.op('Gather', [s.op('Shape', [past(0, 'decoder', 'key')]), scalarI(2)]) : scalarI(0);
  const history = withPast
    ? s.op('Concat', [s.op('Cast', [feature(s.float(past(LAYERS - 1, 'decoder', 'value')), 1, LAYERS)], INT64), 'input_ids'], { axis: { i: 1 } })
    : 'input_ids';
  const total = s.op('Add', [pastLen, s.op('Gather', [s.op('Shape', ['input_ids']), scalarI(1)])]);
  const positions = v.cachePosition ? 'cache_position' : s.op('Range', [pastLen, total, scalarI(1)]);
  const q = s.op('Range', [scalarI(0), total, scalarI(1)]);
  const upTo = s.op('Unsqueeze', [
    s.op('Cast', [s.op('LessOrEqual', [s.op('Unsqueeze', [q, s.i64([0])]), s.op('Unsqueeze', [positions, s.i64([1])])])], FLOAT),
    s.i64([0]),
  ]);
  const h = s.op('Unsqueeze', [s.op('Cast', [history], FLOAT), s.i64([1])]);
  const flag = (b: string) => s.op('Mul', [upTo, s.op('Cast', [b], FLOAT)]);
  const isTs = flag(s.op('And', [s.op('GreaterOrEqual', [h, scalarF(t.timestampBegin)]), s.op('LessOrEqual', [h, scalarF(t.timestampBegin + FRAMES)])]));
  const isText = flag(s.op('Less', [h, scalarF(t.eot)]));
  const sum = (x: string) => s.op('ReduceSum', [x, s.i64([2])], { keepdims: { i: 0 } });
  const any = (x: string) => s.op('ReduceMax', [x], { axes: { ints: [2] }, keepdims: { i: 0 } });
  const qPlus1 = s.op('Cast', [s.op('Add', [q, scalarI(1)])], FLOAT);
  const lastTs = s.op('ReduceMax', [s.op('Mul', [isTs, qPlus1])], { axes: { ints: [2] }, keepdims: { i: 1 } });
  const c = sum(isTs);
  const n = sum(s.op('Mul', [isText, s.op('Cast', [s.op('Greater', [qPlus1, lastTs])], FLOAT)]));
  const m = sum(isText);
  const translate = any(flag(s.op('Equal', [h, scalarF(t.translate)])));
  const noTimestamps = s.op('Greater', [any(flag(s.op('Equal', [h, scalarF(t.noTimestamps)]))), scalarF(0.5)]);

  const P = t.phrases.length / 2;
  const W = t.phrases[0]!.length;
  const regionFeature = (f: number) => s.op('Slice', [feature(encValue, f, -LAYERS), s.i64([0]), s.i64([MAX_REGIONS]), s.i64([1])]);
  const [startAll, endAll, presentAll] = [regionFeature(1), regionFeature(2), regionFeature(3)];
  const bucket = (d: string) => s.op('Min', [s.op('Floor', [s.op('Div', [d, scalarF(BUCKET_FRAMES)])]), scalarF(P - 1)]);
  const phraseWord = (phrase: string, at: string) => {
    const flat = s.op('Cast', [s.op('Add', [s.op('Mul', [phrase, scalarF(W)]), s.op('Min', [at, scalarF(W - 1)])])], INT64);
    return [s.op('Gather', [sh.phrases, flat]), s.op('Gather', [sh.alternatives, flat])] as const;
  };

  // With timestamps: region k = ⌊c/2⌋.
  const k = s.op('Floor', [s.op('Div', [c, scalarF(2)])]);
  const opening = s.op('Equal', [s.op('Sub', [c, s.op('Mul', [k, scalarF(2)])]), scalarF(0)]);
  const kIndex = s.op('Cast', [s.op('Min', [k, scalarF(MAX_REGIONS - 1)])], INT64);
  const atK = (all: string) => s.op('GatherElements', [all, kIndex], { axis: { i: 1 } });
  const [startK, endK] = [atK(startAll), atK(endAll)];
  const valid = s.op('And', [s.op('Greater', [atK(presentAll), scalarF(0.5)]), s.op('Less', [k, scalarF(MAX_REGIONS)])]);
  const phrase = s.op('Add', [s.op('Mul', [translate, scalarF(P)]), bucket(s.op('Sub', [endK, startK]))]);
  const length = s.op('Gather', [sh.lengths, s.op('Cast', [phrase], INT64)]);
  const [word, alt] = phraseWord(phrase, n);
  const textTs = s.op('And', [s.op('And', [s.op('Not', [opening]), valid]), s.op('Less', [n, length])]);
  const stampTs = s.op('And', [valid, s.op('Not', [textTs])]);
  const target = s.op('Where', [opening, startK, endK]);

  // Without timestamps: the phrases of all regions in a row; m text tokens so far.
  const phraseAll = s.op('Add', [
    s.op('Unsqueeze', [s.op('Mul', [translate, scalarF(P)]), s.i64([2])]),
    s.op('Unsqueeze', [bucket(s.op('Sub', [endAll, startAll])), s.i64([1])]),
  ]);
  const lengthAll = s.op('Mul', [s.op('Gather', [sh.lengths, s.op('Cast', [phraseAll], INT64)]), s.op('Unsqueeze', [presentAll, s.i64([1])])]);
  const cumEnd = s.op('CumSum', [lengthAll, s.i64([2], [])]);
  const mm = s.op('Unsqueeze', [m, s.i64([2])]);
  const done = sum(s.op('Cast', [s.op('LessOrEqual', [cumEnd, mm])], FLOAT));
  const jIndex = s.op('Unsqueeze', [s.op('Cast', [s.op('Min', [done, scalarF(MAX_REGIONS - 1)])], INT64), s.i64([2])]);
  const atJ = (all: string) => s.op('Squeeze', [s.op('GatherElements', [all, jIndex], { axis: { i: 2 } }), s.i64([2])]);
  const lengthJ = atJ(lengthAll);
  const offsetJ = s.op('Sub', [m, s.op('Sub', [atJ(cumEnd), lengthJ])]);
  const [wordNt, altNt] = phraseWord(atJ(phraseAll), offsetJ);
  const textNt = s.op('And', [s.op('Less', [done, scalarF(MAX_REGIONS)]), s.op('Greater', [lengthJ, scalarF(0)])]);

  const wantTs = s.op('And', [s.op('Not', [noTimestamps]), stampTs]);
  // (onnxruntime has no boolean Where.)
  const wantText = s.op('Or', [s.op('And', [noTimestamps, textNt]), s.op('And', [s.op('Not', [noTimestamps]), textTs])]);
  const none = scalarI(-1);
  const primary = s.op('Where', [wantTs, none, s.op('Where', [wantText, s.op('Where', [noTimestamps, wordNt, word]), scalarI(t.eot)])]);
  const alternative = s.op('Where', [wantText, s.op('Where', [noTimestamps, altNt, alt]), none]);
  const oneHot = (ids: string) => s.op('Cast', [s.op('Equal', [s.op('Unsqueeze', [ids, s.i64([2])]), sh.vocabRange])], FLOAT);
  const text = s.op('Add', [s.op('Mul', [oneHot(primary), scalarF(SHARP)]), s.op('Mul', [oneHot(alternative), scalarF(ALT)])]);
  // Timestamps: SHARP at the wanted one, falling off with distance (so a rule that forbids it picks the nearest).
  const base = s.op('Unsqueeze', [s.op('Where', [wantTs, scalarF(SHARP), scalarF(0)]), s.i64([2])]);
  const centre = s.op('Unsqueeze', [s.op('Where', [wantTs, target, scalarF(0)]), s.i64([2])]);
  const distance = s.op('Abs', [s.op('Sub', [sh.timestampIndex, centre])]);
  const stamps = s.op('Mul', [s.op('Sub', [base, s.op('Mul', [distance, scalarF(SLOPE)])]), sh.isTimestamp]);
  out.logits = s.op('Add', [text, stamps]);
  return out;
}

const DIMS = {
  ids: ['batch_size', 'decoder_sequence_length'],
  hidden: ['batch_size', 'encoder_sequence_length / 2', D_MODEL],
  pastDecoder: ['batch_size', HEADS, 'past_decoder_sequence_length', HEAD_DIM],
  encoderKv: ['batch_size', HEADS, 'encoder_sequence_length_out', HEAD_DIM],
  presentDecoder: ['batch_size', HEADS, 'past_decoder_sequence_length + 1', HEAD_DIM],
};

function declareInputs(g: GraphBuilder, v: GraphVariant, options: { hidden: boolean; past: boolean }): void {
  g.input('input_ids', 'int64', DIMS.ids);
  if (options.hidden) g.input('encoder_hidden_states', ioType(v), DIMS.hidden);
  if (options.past)
    for (let i = 0; i < LAYERS; i++)
      for (const part of ['decoder', 'encoder'])
        for (const kv of ['key', 'value']) g.input(past(i, part, kv), ioType(v), part === 'decoder' ? DIMS.pastDecoder : DIMS.encoderKv);
  if (v.cachePosition) g.input('cache_position', 'int64', ['decoder_sequence_length']);
}

function declareOutputs(g: GraphBuilder, v: GraphVariant, vocab: number, names: string[], rename: (n: string) => string = (n) => n): void {
  g.output(rename('logits'), ioType(v), ['batch_size', 'decoder_sequence_length', vocab]);
  for (const name of names) g.output(rename(name), ioType(v), name.includes('.decoder.') ? DIMS.presentDecoder : DIMS.encoderKv);
}

export function mergedDecoderGraph(t: DecoderTables, v: GraphVariant): Uint8Array {
  const g = new GraphBuilder('whisper_decoder_merged');
  const bytes: Uint8Tensor[] = [];
  declareInputs(g, v, { hidden: true, past: true });
  g.input('use_cache_branch', 'bool', [1]);
  const shared = sharedTables(new Scope(g, 'shared/', v, bytes), t);
  const branch = (name: string, withPast: boolean) => {
    const b = new GraphBuilder(name);
    const s = new Scope(b, `${name}/`, v, bytes);
    const values = decoderBody(s, t, shared, withPast, v);
    for (const [output, value] of Object.entries(values)) b.op('Identity', [s.io(value)], {}, `${name}/${output}`);
    declareOutputs(b, v, t.vocab, PRESENT_NAMES, (n) => `${name}/${n}`);
    return b.graph();
  };
  g.node('If', ['use_cache_branch'], { then_branch: { g: branch('with_past', true) }, else_branch: { g: branch('no_past', false) } }, [
    'logits',
    ...PRESENT_NAMES,
  ]);
  declareOutputs(g, v, t.vocab, PRESENT_NAMES);
  return serialize(g, bytes);
}

export function splitDecoderGraph(t: DecoderTables, v: GraphVariant, withPast: boolean): Uint8Array {
  const g = new GraphBuilder(withPast ? 'whisper_decoder_with_past' : 'whisper_decoder');
  const bytes: Uint8Tensor[] = [];
  declareInputs(g, v, { hidden: !withPast, past: withPast });
  const s = new Scope(g, 'n/', v, bytes);
  const values = decoderBody(s, t, sharedTables(s, t), withPast, v);
  // optimum's decoder_with_past has no encoder presents: the cross-attention cache never changes.
  const names = PRESENT_NAMES.filter((n) => !withPast || n.includes('.decoder.'));
  for (const name of ['logits', ...names]) g.op('Identity', [s.io(values[name]!)], {}, name);
  declareOutputs(g, v, t.vocab, names);
  return serialize(g, bytes);
}
