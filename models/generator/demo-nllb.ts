/**
 * The demo NLLB translator: a tiny seq2seq model with exactly the Hugging Face optimum export layout
 * (`onnx/encoder_model.onnx` + `onnx/decoder_model_merged.onnx`, or the older decoder / decoder-with-past
 * pair) and NLLB's sidecar files, which translates a Bambara/French/English glossary word by word and copies
 * every token it does not know. NOT a real translation model: it exists so the NLLB runner is exercised end
 * to end on real graphs with the real I/O names, dtypes, ranks and KV-cache protocol.
 *
 * How it translates. The encoder emits each source token's id as a feature. The decoder writes its input
 * ids into its self-attention cache and projects the encoder output into the cross-attention cache; output
 * position p then reads the target language from the decoder cache (the token at position 1), the source
 * language from encoder position 0, and the source token from encoder position p (clamped; padding and
 * `</s>` give `</s>`). A table (source language × target language × token) gives one-hot logits. A word
 * followed by a word-internal token (an unknown word that merely starts like a glossary word) is copied.
 * Because positions and languages come from the caches, a runner that does not feed the presents back, or
 * feeds the empty encoder presents of a cached step, gets wrong output.
 *
 * Beam fixture: English "you" is ambiguous (fr tu/vous, bam i/aw). The first reading scores higher, but the
 * step after it is made uncertain, so greedy decoding says "tu"/"i" while beam search finds "vous"/"aw".
 */
import fs from 'node:fs';
import path from 'node:path';
import { GraphBuilder, type Attr } from '../../src/engines/onnx/graph-builder.js';
import { buildNllbTokenizer, writeNllbTokenizerFiles, type DemoTokenizerType } from './demo-tokenizers.js';

export const DEMO_LANGUAGES = ['bam_Latn', 'eng_Latn', 'fra_Latn'] as const;
type Lang = 'bam' | 'eng' | 'fra';
const LANGS: Lang[] = ['bam', 'eng', 'fra'];

/** One entry per line: bam, fra, eng. Single words only, so every word is one token in every language. */
const GLOSSARY_TEXT = `
ɔwɔ oui yes|ayi non no|foli salutation greeting|hɛrɛ paix peace|kɛnɛya santé health|sɔgɔma matin morning
wula soir evening|su nuit night|tile jour day|bi aujourd'hui today|sini demain tomorrow|kunu hier yesterday
kelen un one|fila deux two|saba trois three|naani quatre four|duuru cinq five|wɔɔrɔ six six|wolonwula sept seven
segin huit eight|kɔnɔntɔn neuf nine|tan dix ten
fa père father|ba mère mother|den enfant child|muso femme woman|cɛ homme man|dencɛ fils son|denmuso fille daughter
balimakɛ frère brother|balimamuso sœur sister|mɔgɔ personne person|denbaya famille family
ji eau water|dumuni nourriture food|so maison house|dugu village village|sira route road|mobili voiture car
jiri arbre tree|malo riz rice|wari argent money|baara travail work|lakɔli école school|kalo lune moon
misi vache cow|wulu chien dog|jakuma chat cat|shɛ poulet chicken|nɔnɔ lait milk|kɔgɔ sel salt|fura médicament medicine
taa aller go|na venir come|dun manger eat|min boire drink|sunɔgɔ dormir sleep|kalan lire read|sɛbɛn écrire write
fɔ dire say|ye voir see|lɔn savoir know|kuma parler speak|san acheter buy|feere vendre sell
ɲuman bon good|jugu mauvais bad|belebele grand big|misɛn petit small
n je I|i tu you|a il he|an nous we|aw vous you|u ils they`;

export const DEMO_GLOSSARY: ReadonlyArray<Record<Lang, string>> = GLOSSARY_TEXT.trim()
  .split(/[|\n]/)
  .map((entry) => {
    const [bam, fra, eng] = entry.trim().split(' ');
    return { bam: bam!, fra: fra!, eng: eng! };
  });

const D_MODEL = 8;
const HEADS = 2;
const HEAD_DIM = D_MODEL / HEADS;
const LAYERS = 2;
const EOS = 2;
/** Logit scale of a confident step, of the step after an ambiguous word's first reading, and the alternative's weight. */
const SHARP = 10;
const FLAT = 1;
const ALT_WEIGHT = 0.95;

export interface NllbDemoOptions {
  tokenizer?: DemoTokenizerType;
  /** `merged` (decoder_model_merged.onnx, default) or `split` (decoder_model.onnx + decoder_with_past_model.onnx). */
  layout?: 'merged' | 'split';
  /** Declare `cache_position` as the transformers 4.43–4.45 exports do. */
  cachePosition?: boolean;
  /** Folder name under outDir (default `nllb` or `nllb-unigram`). */
  name?: string;
}

interface Tables {
  vocab: number;
  table: number[];
  alt: number[];
  langIndex: number[];
  continuation: number[];
  sharpness: number[];
}

/** Translation tables over the token ids: row = source language × 3 + target language; row 9 copies. */
function buildTables(tokens: string[]): Tables {
  const V = tokens.length;
  const id = new Map(tokens.map((t, i) => [t, i]));
  const langIds = DEMO_LANGUAGES.map((l) => id.get(l)!);
  const rows = 10;
  const table = Array.from({ length: rows * V }, (_, i) => i % V);
  const alt = new Array<number>(rows * V).fill(-1);
  for (let r = 0; r < rows; r++) {
    table[r * V + 1] = EOS; // <pad> → </s>
    if (r < 9) for (const l of langIds) table[r * V + l] = langIds[r % 3]!; // a language code asks for the target one
  }
  const sharpness = new Array<number>(V).fill(SHARP);
  LANGS.forEach((src, si) =>
    LANGS.forEach((tgt, ti) => {
      const seen = new Set<number>();
      for (const entry of DEMO_GLOSSARY) {
        const from = id.get(`▁${entry[src]}`)!;
        const to = id.get(`▁${entry[tgt]}`)!;
        const at = (si * 3 + ti) * V + from;
        if (!seen.has(from)) table[at] = to;
        else if (table[at] !== to) {
          alt[at] = to; // second reading of an ambiguous word
          sharpness[table[at]!] = FLAT;
        }
        seen.add(from);
      }
    }),
  );
  // Word-internal tokens: letters, digits, marks and apostrophes (I'm, l'eau) without the `▁` word start.
  const continuation = tokens.map((t) => (/^[\p{L}\p{N}\p{M}'’]/u.test(t) && !/^<.*>$/.test(t) && !langIds.includes(id.get(t)!) ? 1 : 0));
  const langIndex = tokens.map((_, i) => (langIds.includes(i) ? langIds.indexOf(i) : 3));
  return { vocab: V, table, alt, langIndex, continuation, sharpness };
}

/** Names values in a (sub)graph with a prefix, so the If branches never define the same name twice. */
class Scope {
  private n = 0;
  constructor(
    readonly g: GraphBuilder,
    private readonly prefix: string,
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
}

const past = (i: number, part: string, kv: string) => `past_key_values.${i}.${part}.${kv}`;
const present = (i: number, part: string, kv: string) => `present.${i}.${part}.${kv}`;
const PRESENT_NAMES = Array.from({ length: LAYERS }, (_, i) => ['decoder', 'encoder'].flatMap((p) => ['key', 'value'].map((kv) => present(i, p, kv)))).flat();

/** [1,H,1,hd] pattern that writes a [B,1,T,1] value into one feature of every head, scaled per layer. */
function pattern(s: Scope, feature: number, scale: number): string {
  const data = Array.from({ length: HEADS * HEAD_DIM }, (_, k) => (k % HEAD_DIM === feature ? scale : 0));
  return s.f32(data, [1, HEADS, 1, HEAD_DIM]);
}

/**
 * The decoder computation, emitted into `s`. Returns value names for `logits` and every present (the
 * cached step's encoder presents are empty, as optimum's merge makes them).
 */
function decoderBody(s: Scope, t: Record<string, string>, withPast: boolean, cachePosition: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  const scalar = (v: number) => s.i64([v], []);
  const idsF = s.op('Cast', ['input_ids'], { to: { i: 1 } });
  const ids4 = s.op('Unsqueeze', [idsF, s.i64([1, 3])]);
  for (let i = 0; i < LAYERS; i++) {
    const k = s.op('Mul', [ids4, pattern(s, 0, i + 1)]);
    const v = s.op('Mul', [ids4, pattern(s, 1, i + 1)]);
    out[present(i, 'decoder', 'key')] = withPast ? s.op('Concat', [past(i, 'decoder', 'key'), k], { axis: { i: 2 } }) : k;
    out[present(i, 'decoder', 'value')] = withPast ? s.op('Concat', [past(i, 'decoder', 'value'), v], { axis: { i: 2 } }) : v;
  }
  let encValue: string;
  if (withPast) {
    const empty = s.f32([], [0, HEADS, 1, HEAD_DIM]);
    for (let i = 0; i < LAYERS; i++) for (const kv of ['key', 'value']) out[present(i, 'encoder', kv)] = s.op('Identity', [empty]);
    encValue = past(LAYERS - 1, 'encoder', 'value');
  } else {
    const heads = s.op('Reshape', ['encoder_hidden_states', s.i64([0, 0, HEADS, HEAD_DIM])]);
    const x = s.op('Transpose', [heads], { perm: { ints: [0, 2, 1, 3] } });
    for (let i = 0; i < LAYERS; i++) {
      out[present(i, 'encoder', 'key')] = s.op('Mul', [x, s.f32([i + 1], [])]);
      out[present(i, 'encoder', 'value')] = s.op('Mul', [x, s.f32([-(i + 1)], [])]);
    }
    encValue = out[present(LAYERS - 1, 'encoder', 'value')]!;
  }
  // Token ids back out of the caches (value caches of the last layer; exact in float32).
  const idsOf = (cache: string, feature: number, scale: number) => {
    const head0 = s.op('Gather', [cache, scalar(0)], { axis: { i: 1 } });
    const f = s.op('Gather', [head0, scalar(feature)], { axis: { i: 2 } });
    return s.op('Cast', [s.op('Round', [s.op('Div', [f, s.f32([scale], [])])])], { to: { i: 7 } });
  };
  const srcIds = idsOf(encValue, 0, -LAYERS);
  const pastLen = withPast ? s.op('Gather', [s.op('Shape', [past(0, 'decoder', 'key')]), scalar(2)]) : scalar(0);
  const decIds = withPast ? s.op('Concat', [idsOf(past(LAYERS - 1, 'decoder', 'value'), 1, LAYERS), 'input_ids'], { axis: { i: 1 } }) : 'input_ids';
  const newLen = s.op('Gather', [s.op('Shape', ['input_ids']), scalar(1)]);
  const total = s.op('Add', [pastLen, newLen]);
  const langAt = s.op('Min', [scalar(1), s.op('Sub', [total, scalar(1)])]);
  const tgtIdx = s.op('Gather', [t.langIndex!, s.op('Gather', [decIds, langAt], { axis: { i: 1 } })]);
  const srcIdx = s.op('Gather', [t.langIndex!, s.op('Gather', [srcIds, scalar(0)], { axis: { i: 1 } })]);
  const unknown = s.op('Or', [s.op('Equal', [srcIdx, scalar(3)]), s.op('Equal', [tgtIdx, scalar(3)])]);
  const row = s.op('Where', [unknown, scalar(9), s.op('Add', [s.op('Mul', [srcIdx, scalar(3)]), tgtIdx])]);
  const rowOffset = s.op('Unsqueeze', [s.op('Mul', [row, scalar(Number(t.vocab))]), s.i64([1])]);
  // Output position p reads source position p, and checks whether p+1 continues the same word.
  const positions = cachePosition ? 'cache_position' : s.op('Range', [pastLen, total, scalar(1)]);
  const srcLen = s.op('Gather', [s.op('Shape', ['encoder_attention_mask']), scalar(1)]);
  const last = s.op('Sub', [srcLen, scalar(1)]);
  const next = s.op('Add', [positions, scalar(1)]);
  const here = s.op('Min', [positions, last]);
  const after = s.op('Min', [next, last]);
  const srcHere = s.op('Gather', [srcIds, here], { axis: { i: 1 } });
  const srcNext = s.op('Gather', [srcIds, after], { axis: { i: 1 } });
  const validHere = s.op('Cast', [s.op('Gather', ['encoder_attention_mask', here], { axis: { i: 1 } })], { to: { i: 9 } });
  const validNext = s.op('Cast', [s.op('Gather', ['encoder_attention_mask', after], { axis: { i: 1 } })], { to: { i: 9 } });
  const continues = s.op('And', [
    s.op('And', [s.op('Cast', [s.op('Gather', [t.continuation!, srcNext])], { to: { i: 9 } }), validNext]),
    s.op('Less', [next, srcLen]),
  ]);
  const flat = s.op('Add', [rowOffset, srcHere]);
  const none = scalar(-1);
  let primary = s.op('Where', [continues, srcHere, s.op('Gather', [t.table!, flat])]);
  primary = s.op('Where', [validHere, primary, scalar(EOS)]);
  let alternative = s.op('Where', [continues, none, s.op('Gather', [t.alt!, flat])]);
  alternative = s.op('Where', [validHere, alternative, none]);
  const oneHot = (ids: string) => s.op('Cast', [s.op('Equal', [s.op('Unsqueeze', [ids, s.i64([2])]), t.range!])], { to: { i: 1 } });
  const scores = s.op('Add', [oneHot(primary), s.op('Mul', [oneHot(alternative), s.f32([ALT_WEIGHT], [])])]);
  const sharp = s.op('Unsqueeze', [s.op('Gather', [t.sharpness!, 'input_ids']), s.i64([2])]);
  out.logits = s.op('Mul', [scores, sharp]);
  return out;
}

function sharedTables(s: Scope, tables: Tables): Record<string, string> {
  return {
    vocab: String(tables.vocab),
    table: s.i64(tables.table),
    alt: s.i64(tables.alt),
    langIndex: s.i64(tables.langIndex),
    continuation: s.i64(tables.continuation),
    sharpness: s.f32(tables.sharpness),
    range: s.i64(Array.from({ length: tables.vocab }, (_, i) => i)),
  };
}

const DIMS = {
  ids: ['batch_size', 'decoder_sequence_length'],
  mask: ['batch_size', 'encoder_sequence_length'],
  hidden: ['batch_size', 'encoder_sequence_length', D_MODEL],
  pastDecoder: ['batch_size', HEADS, 'past_decoder_sequence_length', HEAD_DIM],
  encoderKv: ['batch_size', HEADS, 'encoder_sequence_length_out', HEAD_DIM],
  presentDecoder: ['batch_size', HEADS, 'present_decoder_sequence_length', HEAD_DIM],
};

function declareInputs(g: GraphBuilder, options: { hidden: boolean; past: boolean; cachePosition: boolean }): void {
  g.input('input_ids', 'int64', DIMS.ids);
  g.input('encoder_attention_mask', 'int64', DIMS.mask);
  if (options.hidden) g.input('encoder_hidden_states', 'float', DIMS.hidden);
  if (options.past)
    for (let i = 0; i < LAYERS; i++)
      for (const part of ['decoder', 'encoder'])
        for (const kv of ['key', 'value']) g.input(past(i, part, kv), 'float', part === 'decoder' ? DIMS.pastDecoder : DIMS.encoderKv);
  if (options.cachePosition) g.input('cache_position', 'int64', ['decoder_sequence_length']);
}

function declareOutputs(g: GraphBuilder, vocab: number, names: string[], rename: (name: string) => string = (n) => n): void {
  g.output(rename('logits'), 'float', ['batch_size', 'decoder_sequence_length', vocab]);
  for (const name of names) g.output(rename(name), 'float', name.includes('.decoder.') ? DIMS.presentDecoder : DIMS.encoderKv);
}

function encoderModel(vocab: number): Uint8Array {
  const g = new GraphBuilder('encoder');
  g.input('input_ids', 'int64', ['batch_size', 'encoder_sequence_length']);
  g.input('attention_mask', 'int64', ['batch_size', 'encoder_sequence_length']);
  g.output('last_hidden_state', 'float', DIMS.hidden);
  const embedding = g.floats(
    Array.from({ length: vocab * D_MODEL }, (_, k) => (k % D_MODEL === 0 ? Math.floor(k / D_MODEL) : 0)),
    [vocab, D_MODEL],
  );
  const mask = g.op('Unsqueeze', [g.op('Cast', ['attention_mask'], { to: { i: 1 } }), g.int64s([2])]);
  g.op('Mul', [g.op('Gather', [embedding, 'input_ids']), mask], {}, 'last_hidden_state');
  return g.toBytes();
}

function mergedDecoder(tables: Tables, cachePosition: boolean): Uint8Array {
  const g = new GraphBuilder('merged');
  declareInputs(g, { hidden: true, past: true, cachePosition });
  g.input('use_cache_branch', 'bool', [1]);
  const shared = sharedTables(new Scope(g, 'shared/'), tables);
  const branch = (name: string, withPast: boolean) => {
    const b = new GraphBuilder(name);
    const values = decoderBody(new Scope(b, `${name}/`), shared, withPast, cachePosition);
    for (const [output, value] of Object.entries(values)) b.op('Identity', [value], {}, `${name}/${output}`);
    declareOutputs(b, tables.vocab, PRESENT_NAMES, (n) => `${name}/${n}`);
    return b.graph();
  };
  g.node('If', ['use_cache_branch'], { then_branch: { g: branch('with_past', true) }, else_branch: { g: branch('no_past', false) } }, [
    'logits',
    ...PRESENT_NAMES,
  ]);
  declareOutputs(g, tables.vocab, PRESENT_NAMES);
  return g.toBytes();
}

function splitDecoder(tables: Tables, withPast: boolean, cachePosition: boolean): Uint8Array {
  const g = new GraphBuilder(withPast ? 'decoder_with_past' : 'decoder');
  declareInputs(g, { hidden: !withPast, past: withPast, cachePosition });
  const s = new Scope(g, 'n/');
  const values = decoderBody(s, sharedTables(s, tables), withPast, cachePosition);
  // optimum's decoder_with_past has no encoder presents: the cross-attention cache never changes.
  const names = PRESENT_NAMES.filter((n) => !withPast || n.includes('.decoder.'));
  for (const name of ['logits', ...names]) g.op('Identity', [values[name]!], {}, name);
  declareOutputs(g, tables.vocab, names);
  return g.toBytes();
}

export async function generateNllbModel(outDir: string, options: NllbDemoOptions = {}): Promise<void> {
  const type = options.tokenizer ?? 'bpe';
  const dir = path.join(outDir, options.name ?? (type === 'bpe' ? 'nllb' : 'nllb-unigram'));
  const words = DEMO_GLOSSARY.flatMap((e) => LANGS.map((l) => e[l]));
  const tokenizer = buildNllbTokenizer(type, words, DEMO_LANGUAGES);
  const tables = buildTables(tokenizer.tokens);
  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  writeNllbTokenizerFiles(dir, tokenizer);
  const onnx = (name: string, bytes: Uint8Array) => fs.writeFileSync(path.join(dir, 'onnx', name), bytes);
  onnx('encoder_model.onnx', encoderModel(tables.vocab));
  if (options.layout === 'split') {
    onnx('decoder_model.onnx', splitDecoder(tables, false, options.cachePosition ?? false));
    onnx('decoder_with_past_model.onnx', splitDecoder(tables, true, options.cachePosition ?? false));
  } else onnx('decoder_model_merged.onnx', mergedDecoder(tables, options.cachePosition ?? false));
  const json = (name: string, value: unknown) => fs.writeFileSync(path.join(dir, name), `${JSON.stringify(value, null, 2)}\n`);
  json('config.json', {
    _name_or_path: 'kuma/demo-nllb',
    architectures: ['M2M100ForConditionalGeneration'],
    model_type: 'm2m_100',
    activation_function: 'relu',
    d_model: D_MODEL,
    decoder_attention_heads: HEADS,
    decoder_ffn_dim: 2 * D_MODEL,
    decoder_layers: LAYERS,
    encoder_attention_heads: HEADS,
    encoder_ffn_dim: 2 * D_MODEL,
    encoder_layers: 1,
    num_hidden_layers: 1,
    max_position_embeddings: 1024,
    scale_embedding: true,
    is_encoder_decoder: true,
    use_cache: true,
    vocab_size: tables.vocab,
    bos_token_id: 0,
    pad_token_id: 1,
    eos_token_id: EOS,
    decoder_start_token_id: EOS,
    max_length: 200,
    tokenizer_class: 'NllbTokenizer',
    torch_dtype: 'float32',
    transformers_version: '4.44.2',
  });
  json('generation_config.json', {
    _from_model_config: true,
    bos_token_id: 0,
    decoder_start_token_id: EOS,
    eos_token_id: EOS,
    max_length: 200,
    pad_token_id: 1,
    transformers_version: '4.44.2',
  });
}
