/**
 * The decoder half of a Hugging Face optimum seq2seq export, with its KV cache: `decoder_model_merged.onnx`
 * (one graph, `use_cache_branch` picks the branch) or the older `decoder_model.onnx` +
 * `decoder_with_past_model.onnx` pair, in any variant suffix (`_fp16`, `_quantized`, ...). It checks the
 * files and signatures at load (naming what is missing), feeds inputs in the dtypes the session declares,
 * and runs the cache protocol of MODELS.md: step 0 feeds the whole prompt with zero-length pasts, later
 * steps feed the new tokens, the previous decoder presents and the step-0 encoder presents (cached steps
 * return empty encoder presents). Written for Whisper; model-specific inputs (NLLB's
 * `encoder_attention_mask`) go through `extraInputs`, so the NLLB runner could share it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createSession, ort, requireSignature, type LoadedSession, type SessionOptions } from '../onnx/session.js';

export interface Seq2SeqDecoderOptions {
  dir: string;
  /** File suffix: '' (fp32), '_fp16', '_quantized', ... */
  variant: string;
  layers: number;
  heads: number;
  headDim: number;
  session: SessionOptions;
  /** Inputs the caller feeds besides ids, hidden states, pasts, `use_cache_branch` and `cache_position`. */
  extraInputs?: string[];
  /** Names the model family in errors ("Whisper"). */
  family: string;
}

/** The running state of one generation: what the decoder needs besides the tokens it is fed. */
export interface DecoderCache {
  hidden: ort.Tensor;
  extra: Record<string, ort.Tensor>;
  past: Record<string, ort.Tensor>;
  /** Tokens already in the cache. */
  length: number;
}

type Typed = Float32Array | Uint16Array;

export function halfToFloat(h: number): number {
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  const value = exp === 0 ? frac * 2 ** -24 : exp === 31 ? (frac ? NaN : Infinity) : (1 + frac / 1024) * 2 ** (exp - 15);
  return h & 0x8000 ? -value : value;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** float32 → IEEE half, rounding to nearest even (subnormals and overflow to ±Infinity included). */
export function floatToHalf(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rest > mid || (rest === mid && half & 1) ? 1 : 0));
  }
  const rest = mant & 0x1fff;
  let out = (e << 10) | (mant >>> 13);
  if (rest > 0x1000 || (rest === 0x1000 && out & 1)) out++; // a carry into the exponent is still correct
  return sign | out;
}

/** A float tensor as float32 values, whatever its dtype. */
export function floatData(t: ort.Tensor): Float32Array {
  if (t.type === 'float32') return t.data as Float32Array;
  if (t.type === 'float16') return Float32Array.from(t.data as Uint16Array, halfToFloat);
  throw new Error(`Expected a float tensor, got ${t.type}`);
}

/** Converts a float tensor to the dtype an input declares (mixed fp16/fp32 component exports exist). */
export function asType(t: ort.Tensor, type: string | undefined): ort.Tensor {
  if (!type || t.type === type) return t;
  if (type === 'float16') return new ort.Tensor('float16', Uint16Array.from(floatData(t), floatToHalf), t.dims);
  if (type === 'float32') return new ort.Tensor('float32', floatData(t), t.dims);
  throw new Error(`Cannot convert a ${t.type} tensor to ${type}`);
}

export function floatTensor(values: Float32Array, dims: readonly number[], type: string | undefined): ort.Tensor {
  return type === 'float16' ? new ort.Tensor('float16', Uint16Array.from(values, floatToHalf), dims) : new ort.Tensor('float32', values, dims);
}

/** Logits of the last position of row `row`, as float32. */
export function lastLogits(t: ort.Tensor, row = 0): Float32Array {
  const [, steps, vocab] = t.dims as [number, number, number];
  const at = (row * steps + steps - 1) * vocab;
  const data = t.data as Typed;
  if (data instanceof Float32Array) return data.slice(at, at + vocab);
  return Float32Array.from(data.subarray(at, at + vocab), halfToFloat);
}

export class Seq2SeqDecoder {
  private readonly pastNames: string[];

  private constructor(
    readonly layout: 'merged' | 'split',
    private readonly first: LoadedSession,
    private readonly cached: LoadedSession,
    private readonly options: Seq2SeqDecoderOptions,
  ) {
    this.pastNames = kvNames('past_key_values', options.layers, ['decoder', 'encoder']);
  }

  /** Loads the merged decoder, or the split pair when there is no merged file; checks both signatures. */
  static async load(options: Seq2SeqDecoderOptions): Promise<Seq2SeqDecoder> {
    const file = (name: string) => path.join(options.dir, 'onnx', `${name}${options.variant}.onnx`);
    const merged = fs.existsSync(file('decoder_model_merged'));
    if (!merged) {
      const missing = [file('decoder_model'), file('decoder_with_past_model')].filter((f) => !fs.existsSync(f));
      if (missing.length)
        throw new Error(
          `The ${options.family} model directory ${options.dir} has no ${path.basename(file('decoder_model_merged'))} and is missing ${missing.map((f) => path.basename(f)).join(', ')} (the split layout)`,
        );
    }
    const { layers } = options;
    const pastAll = kvNames('past_key_values', layers, ['decoder', 'encoder']);
    const presentAll = kvNames('present', layers, ['decoder', 'encoder']);
    const extra = options.extraInputs ?? [];
    const sessions: LoadedSession[] = [];
    try {
      if (merged) {
        const one = await createSession(file('decoder_model_merged'), options.session);
        sessions.push(one);
        requireSignature(one, ['input_ids', 'encoder_hidden_states', 'use_cache_branch', ...extra, ...pastAll], ['logits', ...presentAll]);
        check(one, options);
        return new Seq2SeqDecoder('merged', one, one, options);
      }
      const first = await createSession(file('decoder_model'), options.session);
      sessions.push(first);
      requireSignature(first, ['input_ids', 'encoder_hidden_states', ...extra], ['logits', ...presentAll]);
      check(first, options);
      const cached = await createSession(file('decoder_with_past_model'), options.session);
      sessions.push(cached);
      requireSignature(cached, ['input_ids', ...extra, ...pastAll], ['logits', ...kvNames('present', layers, ['decoder'])]);
      check(cached, options);
      return new Seq2SeqDecoder('split', first, cached, options);
    } catch (err) {
      await Promise.all(sessions.map((s) => s.release()));
      throw err;
    }
  }

  /** Element type the decoder wants for `encoder_hidden_states`. */
  get hiddenType(): string | undefined {
    return this.first.inputTypes.encoder_hidden_states;
  }

  get files(): string[] {
    return [...new Set([this.first.file, this.cached.file])].map((f) => path.basename(f));
  }

  start(hidden: ort.Tensor, extra: Record<string, ort.Tensor> = {}): DecoderCache {
    return { hidden: asType(hidden, this.hiddenType), extra, past: {}, length: 0 };
  }

  /** Feeds `tokens` (one row per batch row, equal lengths); returns the logits and updates the cache. */
  async step(cache: DecoderCache, tokens: number[][]): Promise<ort.Tensor> {
    const stepZero = cache.length === 0;
    const loaded = stepZero ? this.first : this.cached;
    const rows = tokens.length;
    const width = tokens[0]!.length;
    const { heads, headDim } = this.options;
    const pastType = loaded.inputTypes['past_key_values.0.decoder.key'] ?? 'float32';
    const empty = floatTensor(new Float32Array(0), [rows, heads, 0, headDim], pastType);
    const feeds: Record<string, ort.Tensor> = {
      ...cache.extra,
      input_ids: intTensor(loaded, 'input_ids', tokens.flat(), [rows, width]),
      encoder_hidden_states: cache.hidden,
      use_cache_branch: new ort.Tensor('bool', Uint8Array.of(stepZero ? 0 : 1), [1]),
      cache_position: intTensor(
        loaded,
        'cache_position',
        Array.from({ length: width }, (_, i) => cache.length + i),
        [width],
      ),
    };
    for (const name of this.pastNames) feeds[name] = stepZero ? empty : cache.past[name]!;
    const result = await loaded.run(Object.fromEntries(loaded.inputNames.map((n) => [n, feeds[n]!])));
    for (const name of this.pastNames) {
      // Cached steps return empty encoder presents (or none): the step-0 ones stay valid for the whole generation.
      if (name.includes('.decoder.') || stepZero) cache.past[name] = result[name.replace('past_key_values', 'present')]!;
    }
    cache.length += width;
    return result.logits!;
  }

  async release(): Promise<void> {
    await Promise.all([...new Set([this.first, this.cached])].map((s) => s.release()));
  }
}

export function kvNames(prefix: string, layers: number, parts: string[]): string[] {
  return Array.from({ length: layers }, (_, i) => parts.flatMap((p) => ['key', 'value'].map((kv) => `${prefix}.${i}.${p}.${kv}`))).flat();
}

function intTensor(loaded: LoadedSession, name: string, values: number[], dims: number[]): ort.Tensor {
  return loaded.inputTypes[name] === 'int32'
    ? new ort.Tensor('int32', Int32Array.from(values), dims)
    : new ort.Tensor(
        'int64',
        BigInt64Array.from(values, (v) => BigInt(v)),
        dims,
      );
}

/** Layer count, head shape and input names must match what this decoder feeds, or it says what differs. */
function check(loaded: LoadedSession, options: Seq2SeqDecoderOptions): void {
  const { layers, heads, headDim } = options;
  if (loaded.inputNames.includes(`past_key_values.${layers}.decoder.key`) || loaded.outputNames.includes(`present.${layers}.decoder.key`))
    throw new Error(`${loaded.file} has more decoder layers than config.json's ${layers}`);
  const feedable = new Set([
    'input_ids',
    'encoder_hidden_states',
    'use_cache_branch',
    'cache_position',
    ...(options.extraInputs ?? []),
    ...kvNames('past_key_values', layers, ['decoder', 'encoder']),
  ]);
  const unknown = loaded.inputNames.filter((n) => !feedable.has(n));
  if (unknown.length) throw new Error(`${loaded.file} declares inputs the ${options.family} runner cannot feed: ${unknown.join(', ')}`);
  const meta = loaded.session.inputMetadata.find((m) => m.name === 'past_key_values.0.decoder.key');
  const shape = meta?.isTensor ? meta.shape : [];
  if ((typeof shape[1] === 'number' && shape[1] !== heads) || (typeof shape[3] === 'number' && shape[3] !== headDim))
    throw new Error(`${loaded.file}: past_key_values are [batch, ${shape[1]}, past, ${shape[3]}], config.json says ${heads} heads of ${headDim}`);
}
