/**
 * The NLLB-200 / M2M100 translation runner for the Hugging Face optimum seq2seq export:
 * `onnx/encoder_model.onnx` + `onnx/decoder_model_merged.onnx` (or the older `decoder_model.onnx` +
 * `decoder_with_past_model.onnx`), with `config.json`, `generation_config.json` and `tokenizer.json`.
 * Method `translate({ texts, source, target, beams?, maxLength? })`: each text is split into sentences, all
 * sentences of the call are translated as one batch (up to `maxBatchSentences`; right-padded, masked, rows
 * dropped as their sentence finishes) by greedy or length-normalised beam search over the KV cache (caches
 * reordered by beam), then re-joined per text. Language codes are NLLB's (`bam_Latn`) or bm/fr/en.
 *
 * Protocol (MODELS.md): source `[src_lang] tokens </s>`; the decoder starts from `decoder_start_token_id`
 * and its first token is forced to the target language (both fed as the step-0 prompt); step 0 runs with
 * `use_cache_branch=false` and zero-length pasts, later steps feed the last token, the previous decoder
 * presents and the step-0 encoder presents (cached steps return empty encoder presents).
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { Runner, RunnerContext, RunnerFactory } from '../runner.js';
import { UnknownMethodError } from '../runner.js';
import { createSession, ort, requireSignature, type LoadedSession } from '../onnx/session.js';
import { TextTokenizer } from '../text/tokenizer.js';
import { joinSentences, splitSentences, DEFAULT_MAX_SENTENCE_CHARS } from './sentence-splitter.js';

import { beamStep, greedyStep, type Beam, type Hypothesis } from './nllb-search.js';
import { TranslationBatcher, type BatchHooks } from './nllb-batcher.js';

const OptionsSchema = z
  .object({
    /** Suffix of the ONNX files: '' (fp32), '_quantized', '_fp16', '_int8', '_q4'. */
    variant: z.string().default(''),
    beams: z.number().int().min(1).max(16).default(1),
    maxSentenceChars: z.number().int().min(20).default(DEFAULT_MAX_SENTENCE_CHARS),
    /** Longest source kept per sentence, in tokens (NLLB was trained on ≤ 512). */
    maxSourceTokens: z.number().int().min(4).default(512),
    /** Sentences per batch, of one call or of concurrent calls (nllb-batcher.ts; bounds memory). */
    maxBatchSentences: z.number().int().min(1).default(64),
    /** Batches generated at once, step by step in turn: a newcomer's wait for a long generation to end. */
    batchLanes: z.number().int().min(1).max(8).default(2),
    /**
     * Output-length bound per sentence, as fairseq's max_len_a/max_len_b: at most ⌈a × source tokens⌉ + b new
     * tokens (and never past max_length). A translation is about as long as its source (FLORES-200 French
     * against Bambara: 1.05× the tokens at the median, under 3× for every pair); a model caught in a repetition
     * loop would otherwise write to max_length (200) on every sentence, ≈ 13 s of a core at NLLB-600M size.
     */
    maxLengthA: z.number().min(0).max(64).default(3),
    maxLengthB: z.number().int().min(0).max(4096).default(10),
  })
  .passthrough();

const TranslateInput = z.object({
  texts: z.array(z.string()).min(1),
  source: z.string().min(1),
  target: z.string().min(1),
  beams: z.number().int().min(1).max(16).optional(),
  maxLength: z.number().int().min(3).max(4096).optional(),
});
export type TranslateInput = z.infer<typeof TranslateInput>;
export interface TranslateOutput {
  translations: string[];
  /** Source tokens fed to the encoder, language code and `</s>` included. */
  inputTokens: number;
  /** Tokens generated after the `[decoder_start, target_lang]` prompt, `</s>` included. */
  outputTokens: number;
}

/** Short codes that callers use for the three languages Kuma serves; anything else must be an NLLB code. */
const LANGUAGE_ALIASES: Record<string, string> = {
  bm: 'bam_Latn',
  bam: 'bam_Latn',
  fr: 'fra_Latn',
  fra: 'fra_Latn',
  fre: 'fra_Latn',
  en: 'eng_Latn',
  eng: 'eng_Latn',
};

/** A dropped `<unk>` leaves its `▁` behind: collapse the double space it makes. */
const clean = (text: string) => text.replace(/ {2,}/g, ' ').trim();

function readJson(file: string, required: boolean): Record<string, unknown> {
  if (!fs.existsSync(file)) {
    if (required) throw new Error(`The NLLB model directory is missing ${path.basename(file)}: ${file}`);
    return {};
  }
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
}

function intField(config: Record<string, unknown>, names: string[], file: string): number {
  for (const name of names) if (Number.isInteger(config[name])) return config[name] as number;
  throw new Error(`${file} has no ${names.join(' / ')}`);
}

type Typed = Float32Array | Uint16Array | BigInt64Array | Int32Array | Uint8Array;

/** Copies rows (axis 0) of a tensor: beam reordering and dropping finished rows. */
function selectRows(t: ort.Tensor, rows: readonly number[]): ort.Tensor {
  const [n, ...rest] = t.dims;
  const size = rest.reduce((a, b) => a * b, 1);
  if (rows.length === n && rows.every((r, i) => r === i)) return t;
  const src = t.data as Typed;
  const out = new (src.constructor as new (n: number) => Typed)(rows.length * size);
  rows.forEach((r, i) => out.set(src.subarray(r * size, (r + 1) * size) as never, i * size));
  return new ort.Tensor(t.type as 'float32', out as Float32Array, [rows.length, ...rest]);
}

function halfToFloat(h: number): number {
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  const value = exp === 0 ? frac * 2 ** -24 : exp === 31 ? (frac ? NaN : Infinity) : (1 + frac / 1024) * 2 ** (exp - 15);
  return h & 0x8000 ? -value : value;
}

/** Logits of the last position of each row, as float32 whatever the export's dtype. */
function lastLogits(t: ort.Tensor): Float32Array[] {
  const [rows, steps, vocab] = t.dims as [number, number, number];
  const data = t.data as Float32Array | Uint16Array;
  return Array.from({ length: rows }, (_, r) => {
    const at = (r * steps + steps - 1) * vocab;
    if (data instanceof Float32Array) return data.subarray(at, at + vocab);
    return Float32Array.from(data.subarray(at, at + vocab), halfToFloat);
  });
}

/** Reports each sentence that had rows before a step and has none after it, with its best hypothesis. */
function reportFinished(before: Beam[], after: Beam[], done: Hypothesis[][], hooks: BatchHooks): void {
  const still = new Set(after.map((b) => b.sentence));
  for (const sentence of new Set(before.map((b) => b.sentence))) {
    if (still.has(sentence) || hooks.cancelled(sentence)) continue;
    const best = done[sentence]!.reduce<Hypothesis | undefined>((top, h) => (!top || h.normalized > top.normalized ? h : top), undefined);
    if (best) hooks.finished(sentence, best);
  }
}

export const createNllbRunner: RunnerFactory = async ({ entry, dir, intraOpThreads, interOpThreads }) => {
  const options = OptionsSchema.parse(entry.options);
  const config = readJson(path.join(dir, 'config.json'), true);
  const generation = readJson(path.join(dir, 'generation_config.json'), false);
  const configFile = path.join(dir, 'config.json');
  const layers = intField(config, ['decoder_layers', 'num_hidden_layers'], configFile);
  const heads = intField(config, ['decoder_attention_heads'], configFile);
  const headDim = intField(config, ['d_model'], configFile) / heads;
  const decoderStart = intField({ ...config, ...generation }, ['decoder_start_token_id'], configFile);
  const eos = intField({ ...config, ...generation }, ['eos_token_id'], configFile);
  const pad = intField({ ...config, ...generation }, ['pad_token_id'], configFile);
  const defaultMaxLength = Number.isInteger(generation.max_length)
    ? (generation.max_length as number)
    : Number.isInteger(config.max_length)
      ? (config.max_length as number)
      : 200;
  const tokenizer = TextTokenizer.fromDirectory(dir);

  const file = (name: string) => path.join(dir, 'onnx', `${name}${options.variant}.onnx`);
  const sessionOptions = { intraOpThreads, interOpThreads };
  const merged = fs.existsSync(file('decoder_model_merged'));
  const missing = [file('encoder_model'), ...(merged ? [] : [file('decoder_model'), file('decoder_with_past_model')])].filter((f) => !fs.existsSync(f));
  if (missing.length)
    throw new Error(
      `The NLLB model directory ${dir} is missing ${missing.join(', ')}` +
        (merged ? '' : ` (needed when there is no ${path.basename(file('decoder_model_merged'))})`),
    );
  const encoder = await createSession(file('encoder_model'), sessionOptions);
  requireSignature(encoder, ['input_ids', 'attention_mask'], ['last_hidden_state']);

  const kvNames = (prefix: string, parts: string[]) =>
    Array.from({ length: layers }, (_, i) => parts.flatMap((p) => ['key', 'value'].map((kv) => `${prefix}.${i}.${p}.${kv}`))).flat();
  const pastAll = kvNames('past_key_values', ['decoder', 'encoder']);
  const presentAll = kvNames('present', ['decoder', 'encoder']);
  const feedable = new Set(['input_ids', 'encoder_attention_mask', 'encoder_hidden_states', 'use_cache_branch', 'cache_position', ...pastAll]);
  /** Layer count, head shape and input names must match what this runner feeds, or it says what differs. */
  const checkDecoder = (loaded: LoadedSession): void => {
    if (loaded.inputNames.includes(`past_key_values.${layers}.decoder.key`) || loaded.outputNames.includes(`present.${layers}.decoder.key`))
      throw new Error(`${loaded.file} has more decoder layers than config.json's ${layers}`);
    const unknown = loaded.inputNames.filter((n) => !feedable.has(n));
    if (unknown.length) throw new Error(`${loaded.file} declares inputs the NLLB runner cannot feed: ${unknown.join(', ')}`);
    const meta = loaded.session.inputMetadata.find((m) => m.name === 'past_key_values.0.decoder.key');
    const shape = meta?.isTensor ? meta.shape : [];
    if ((typeof shape[1] === 'number' && shape[1] !== heads) || (typeof shape[3] === 'number' && shape[3] !== headDim))
      throw new Error(`${loaded.file}: past_key_values are [batch, ${shape[1]}, past, ${shape[3]}], config.json says ${heads} heads of ${headDim}`);
  };
  const base = ['input_ids', 'encoder_attention_mask'];
  let first: LoadedSession;
  let cached: LoadedSession;
  if (merged) {
    first = cached = await createSession(file('decoder_model_merged'), sessionOptions);
    requireSignature(first, [...base, 'encoder_hidden_states', 'use_cache_branch', ...pastAll], ['logits', ...presentAll]);
    checkDecoder(first);
  } else {
    first = await createSession(file('decoder_model'), sessionOptions);
    requireSignature(first, [...base, 'encoder_hidden_states'], ['logits', ...presentAll]);
    cached = await createSession(file('decoder_with_past_model'), sessionOptions);
    requireSignature(cached, [...base, ...pastAll], ['logits', ...kvNames('present', ['decoder'])]);
    checkDecoder(first);
    checkDecoder(cached);
  }
  const pastType = first.inputTypes['past_key_values.0.decoder.key'] ?? cached.inputTypes['past_key_values.0.decoder.key'] ?? 'float32';
  const intTensor = (loaded: LoadedSession, name: string, values: number[], dims: number[]) =>
    loaded.inputTypes[name] === 'int32'
      ? new ort.Tensor('int32', Int32Array.from(values), dims)
      : new ort.Tensor(
          'int64',
          BigInt64Array.from(values, (v) => BigInt(v)),
          dims,
        );
  const emptyPast = (rows: number) =>
    pastType === 'float16'
      ? new ort.Tensor('float16', new Uint16Array(0), [rows, heads, 0, headDim])
      : new ort.Tensor('float32', new Float32Array(0), [rows, heads, 0, headDim]);

  /** State per row of the running batch: what the decoder needs beside the token it is fed. */
  interface Rows {
    hidden: ort.Tensor;
    mask: ort.Tensor;
    past: Record<string, ort.Tensor>;
    length: number;
  }

  async function decoderStep(rows: Rows, tokens: number[][]): Promise<ort.Tensor> {
    const stepZero = rows.length === 0;
    const session = stepZero ? first : cached;
    const count = tokens.length;
    const width = tokens[0]!.length;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: intTensor(session, 'input_ids', tokens.flat(), [count, width]),
      encoder_attention_mask: rows.mask,
      encoder_hidden_states: rows.hidden,
      use_cache_branch: new ort.Tensor('bool', Uint8Array.of(stepZero ? 0 : 1), [1]),
      cache_position: intTensor(
        session,
        'cache_position',
        Array.from({ length: width }, (_, i) => rows.length + i),
        [width],
      ),
    };
    for (const name of pastAll) feeds[name] = stepZero ? emptyPast(count) : rows.past[name]!;
    const result = await session.run(Object.fromEntries(session.inputNames.map((n) => [n, feeds[n]!])));
    for (const name of pastAll) {
      const presentName = name.replace('past_key_values', 'present');
      // Cached steps return empty encoder presents: the step-0 ones stay valid for the whole generation.
      if (name.includes('.decoder.') || stepZero) rows.past[name] = result[presentName]!;
    }
    rows.length += width;
    return result.logits!;
  }

  /**
   * Generates for a batch of source id sequences (nllb-batcher.ts): each sentence's best hypothesis (prompt
   * excluded) goes to `hooks.finished` as soon as its last row ends; cancelled sentences' rows are dropped.
   */
  async function generate(sources: number[][], targetId: number, beams: number, maxLength: number, hooks: BatchHooks): Promise<void> {
    const batch = sources.length;
    const width = Math.max(...sources.map((s) => s.length));
    const ids = sources.flatMap((s) => [...s, ...new Array<number>(width - s.length).fill(pad)]);
    const maskValues = sources.flatMap((s) => Array.from({ length: width }, (_, i) => (i < s.length ? 1 : 0)));
    const mask = intTensor(encoder, 'attention_mask', maskValues, [batch, width]);
    const encoded = await encoder.run({ input_ids: intTensor(encoder, 'input_ids', ids, [batch, width]), attention_mask: mask });
    await hooks.checkpoint();
    // Every beam of a sentence is a row; rows are dropped when their sentence finishes.
    const expand = Array.from({ length: batch * beams }, (_, r) => Math.floor(r / beams));
    const decoderMask = intTensor(first, 'encoder_attention_mask', maskValues, [batch, width]);
    const rows: Rows = { hidden: selectRows(encoded.last_hidden_state!, expand), mask: selectRows(decoderMask, expand), past: {}, length: 0 };
    const bounds = sources.map((s) => Math.min(maxLength - 2, Math.ceil(options.maxLengthA * s.length) + options.maxLengthB));
    const maxNew = (sentence: number) => bounds[sentence]!;
    let live: Beam[] = expand.map((sentence, r) => ({ sentence, tokens: [], score: r % beams === 0 ? 0 : -Infinity }));
    const done: Hypothesis[][] = Array.from({ length: batch }, () => []);
    let input = live.map(() => [decoderStart, targetId]);
    while (live.length > 0) {
      const logits = lastLogits(await decoderStep(rows, input));
      const step = beams === 1 ? greedyStep(live, logits, eos, maxNew, done) : beamStep(live, logits, beams, eos, maxNew, done);
      const kept = step.beams.map((_, i) => i).filter((i) => !hooks.cancelled(step.beams[i]!.sentence));
      const next = { beams: kept.map((i) => step.beams[i]!), sources: kept.map((i) => step.sources[i]!) };
      reportFinished(live, next.beams, done, hooks);
      // Rows of one sentence share their encoder data: only a changed row → sentence layout needs a copy.
      const layoutChanged = next.beams.length !== live.length || next.beams.some((b, i) => b.sentence !== live[i]!.sentence);
      live = next.beams;
      if (live.length === 0) break;
      for (const name of pastAll) if (name.includes('.decoder.') || layoutChanged) rows.past[name] = selectRows(rows.past[name]!, next.sources);
      if (layoutChanged) {
        rows.hidden = selectRows(rows.hidden, next.sources);
        rows.mask = selectRows(rows.mask, next.sources);
      }
      input = live.map((beam) => [beam.tokens.at(-1)!]);
      await hooks.checkpoint();
    }
  }
  const batcher = new TranslationBatcher(generate, options.maxBatchSentences, options.batchLanes);

  const languages = tokenizer.addedTokens().filter((t) => /^[a-z]{3}_[A-Z][a-z]{3}$/.test(t.content));
  const languageIds = new Map(languages.map((l) => [l.content, l.id]));
  function languageId(code: string, role: string): number {
    // Only language tokens are languages: a real NLLB vocabulary also has pieces spelt `fr`, `en` or `bm`,
    // and a piece taken as the target language makes the model write nonsense.
    const id = languageIds.get(code) ?? languageIds.get(LANGUAGE_ALIASES[code.toLowerCase()] ?? '');
    if (id === undefined) throw new Error(`The ${role} language ${code} is not in this model (it knows ${languages.map((l) => l.content).join(', ')})`);
    return id;
  }

  async function translate(raw: unknown, ctx: RunnerContext): Promise<TranslateOutput> {
    const input = TranslateInput.parse(raw);
    const sourceId = languageId(input.source, 'source');
    const targetId = languageId(input.target, 'target');
    const beams = input.beams ?? options.beams;
    const maxLength = input.maxLength ?? defaultMaxLength;
    const pieces = input.texts.map((text) => splitSentences(text, { maxChars: options.maxSentenceChars }));
    const sources = pieces.flat().map((p) => [sourceId, ...tokenizer.encode(p.text).slice(0, options.maxSourceTokens - 2), eos]);
    const generated = await batcher.translate(sources, targetId, beams, maxLength, ctx);
    let next = 0;
    const translations = pieces.map((textPieces) =>
      joinSentences(
        textPieces,
        textPieces.map(() => clean(tokenizer.decode(generated[next++]!.tokens))),
      ),
    );
    return {
      translations,
      inputTokens: sources.reduce((n, s) => n + s.length, 0),
      outputTokens: generated.reduce((n, g) => n + g.tokens.length + (g.ended ? 1 : 0), 0),
    };
  }

  const runner: Runner = {
    info: () => ({
      engine: 'nllb',
      layout: merged ? 'merged' : 'split',
      layers,
      heads,
      headDim,
      vocabSize: config.vocab_size,
      tokenizer: tokenizer.modelType,
      languages: languages.map((l) => l.content),
      maxLength: defaultMaxLength,
      // The limits that bound what a call can bill in tokens (translate-token-bound.ts).
      maxSourceTokens: options.maxSourceTokens,
      maxSentenceChars: options.maxSentenceChars,
      maxLengthA: options.maxLengthA,
      maxLengthB: options.maxLengthB,
    }),
    async warmup() {
      const [a, b] = [languages[0], languages[1] ?? languages[0]];
      if (!a || !b) return;
      await generate([[a.id, eos]], b.id, 1, 4, { cancelled: () => false, finished: () => {}, checkpoint: async () => {} });
    },
    call(method, input, ctx) {
      if (method === 'translate') return translate(input, ctx);
      throw new UnknownMethodError('nllb', method);
    },
    async close() {
      await Promise.all([...new Set([encoder, first, cached])].map((s) => s.release()));
    },
  };
  return runner;
};
