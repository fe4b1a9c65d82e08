/**
 * NLLB-style `tokenizer.json` files for the demo translation models, in both model types that Hugging Face
 * tokenizers ship for NLLB/M2M100-like checkpoints: BPE and Unigram. Everything around the model is NLLB's
 * real pipeline: a Precompiled (sentencepiece nmt_nfkc) normaliser followed by `Replace(" {2,}", " ")`, a
 * Metaspace pre-tokeniser (`▁`, prepend_scheme always), a TemplateProcessing post-processor
 * `[src_lang] $A </s>`, `<s> <pad> </s> <unk>` at ids 0–3, language codes and `<mask>` as added special tokens
 * after the vocabulary (or, padded to a real checkpoint's size, at its ids), and a Metaspace decoder. Also
 * writes `tokenizer_config.json` and `special_tokens_map.json` as HF ships them. Deterministic: same bytes
 * every run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { nmtNfkc, precompiledCharsmap } from './precompiled-charsmap.js';

export { nmtNfkc, precompiledCharsmap };

export type DemoTokenizerType = 'bpe' | 'unigram';

export const SPECIAL_TOKENS = ['<s>', '<pad>', '</s>', '<unk>'] as const;
const MASK = '<mask>';
const SPACE = '\u2581';

/** Every character the vocabulary covers, alone and after `▁`: Bambara, French and English text. */
const LETTERS = 'abcdefghijklmnopqrstuvwxyz' + 'àáâäãåæçèéêëìíîïñòóôöõœùúûüýÿ' + 'ɛɔɲŋ';
export const DEMO_CHARACTERS: readonly string[] = [
  ...LETTERS,
  ...LETTERS.toUpperCase(),
  ...'\u0300\u0301\u0302\u0303\u0308\u030c', // combining tone marks (ɛ̀ ɔ́ have no precomposed form)
  ...'0123456789',
  ...'.,;:!?\'"’‘“”«»()[]{}-–—/\\%&+*=@#$€£_~<>|^`',
];

export interface DemoTokenizer {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  specialTokensMap: Record<string, unknown>;
  /** id → token string, added tokens included (length = vocab_size of the model). */
  tokens: string[];
}

/** Deterministic fraction in [0,1) per index, so Unigram scores never tie. */
const jitter = (i: number) => (i * 0.6180339887498949) % 1;

/**
 * A real checkpoint's id layout, for a tokenizer as large as the model's vocabulary (the real-size pack's
 * NLLB-600M: 256,206 ids with `bam_Latn` 256022, `eng_Latn` 256047, `fra_Latn` 256057, `<mask>` 256203).
 * The vocabulary is padded with filler pieces up to `size` ids; languages and `<mask>` take their fixed ids.
 */
export interface NllbVocabularyLayout {
  size: number;
  languageIds: Readonly<Record<string, number>>;
  maskId: number;
}

/** Letters of the filler pieces: lowercase Bambara/French, so the fillers also segment unknown words. */
const FILLER_LETTERS = [...'abcdefghijklmnopqrstuvwxyzɛɔɲŋ'];

/**
 * Filler pieces as BPE merges, breadth-first by length: word-initial (`▁ab`) and word-internal (`ab`) letter
 * strings, each one merge from a shorter piece, so that every filler is a valid, reachable BPE token — as the
 * real vocabulary's sub-word pieces are — and the merge list grows with the vocabulary as it does in NLLB's.
 */
function* fillerMerges(): Generator<[string, string]> {
  let level = [...FILLER_LETTERS.map((c) => SPACE + c), ...FILLER_LETTERS];
  for (;;) {
    const next: string[] = [];
    for (const left of level) {
      for (const c of FILLER_LETTERS) {
        yield [left, c];
        next.push(left + c);
      }
    }
    level = next;
  }
}

/**
 * Builds the vocabulary: specials, `▁`, each character alone and after `▁`, then every `▁word` of `words`
 * with all its prefixes (the BPE merge chain that builds it). BPE merges and Unigram scores both make whole
 * words win, so a glossary word is one token in either model type. With a `layout`, filler pieces pad the
 * vocabulary to the layout's size and languages and `<mask>` take its ids; without, they follow the vocabulary.
 */
export function buildNllbTokenizer(
  type: DemoTokenizerType,
  words: readonly string[],
  languages: readonly string[],
  layout?: NllbVocabularyLayout,
): DemoTokenizer {
  const vocab: string[] = [...SPECIAL_TOKENS, SPACE];
  const kind = new Map<string, 'char' | 'spacechar' | 'word' | 'prefix' | 'filler'>();
  const add = (token: string, k: 'char' | 'spacechar' | 'word' | 'prefix' | 'filler') => {
    if (!kind.has(token)) vocab.push(token);
    if (!kind.has(token) || k === 'word') kind.set(token, k);
  };
  for (const c of DEMO_CHARACTERS) add(c, 'char');
  for (const c of DEMO_CHARACTERS) add(SPACE + c, 'spacechar');
  const merges: Array<[string, string]> = DEMO_CHARACTERS.map((c) => [SPACE, c]);
  const chains = new Set<string>();
  for (const word of [...new Set(words)].sort()) {
    const chars = [...word];
    for (const c of chars) if (!DEMO_CHARACTERS.includes(c)) throw new Error(`Glossary word ${word}: character ${c} is not in the vocabulary`);
    for (let n = 2; n <= chars.length; n++) {
      const left = SPACE + chars.slice(0, n - 1).join('');
      const merged = left + chars[n - 1];
      if (!chains.has(merged)) merges.push([left, chars[n - 1]!]);
      chains.add(merged);
      add(merged, n === chars.length ? 'word' : 'prefix');
    }
    if (chars.length === 1) kind.set(SPACE + word, 'word');
  }
  const reserved = layout ? languages.map((l) => layout.languageIds[l]).concat(layout.maskId) : [];
  if (layout) {
    if (reserved.some((id) => id === undefined || id < vocab.length || id >= layout.size) || new Set(reserved).size !== reserved.length)
      throw new Error(`Language and mask ids must be distinct, inside the vocabulary size ${layout.size} and past the ${vocab.length} word pieces`);
    const pieces = layout.size - reserved.length;
    for (const [left, right] of fillerMerges()) {
      if (vocab.length >= pieces) break;
      if (kind.has(left + right)) continue; // a word's chain already built it
      merges.push([left, right]);
      add(left + right, 'filler');
    }
  }
  // Ids: in vocabulary order, stepping over the ids a layout reserves for languages and <mask>.
  const taken = new Set(reserved);
  const ids: number[] = [];
  for (let id = 0; ids.length < vocab.length; id++) if (!taken.has(id)) ids.push(id);
  const base = { char: -9, spacechar: -8, word: -3, prefix: -14, filler: -16 };
  const score = (t: string, i: number) => (i < 4 ? 0 : t === SPACE ? -7.5 : base[kind.get(t)!] - 0.01 * jitter(i));
  const addedContent = [...languages, MASK];
  const added = addedContent.map((content, i) => ({ content, id: layout ? reserved[i]! : vocab.length + i }));
  // With a layout, the model's vocabulary also lists the languages and <mask> at their ids (as it lists the
  // specials): the Rust library gives an added token that the model lacks the next free id after the model's.
  const byId: string[] = [];
  vocab.forEach((t, i) => (byId[ids[i]!] = t));
  for (const a of added) byId[a.id] = a.content;
  const addedIds = new Set(added.map((a) => a.id));
  const model =
    type === 'bpe'
      ? {
          type: 'BPE',
          dropout: null,
          unk_token: '<unk>',
          continuing_subword_prefix: null,
          end_of_word_suffix: null,
          fuse_unk: true,
          byte_fallback: false,
          ignore_merges: false,
          vocab: Object.fromEntries(layout ? byId.map((t, id) => [t, id]) : vocab.map((t, i) => [t, i])),
          // Legacy "a b" merge strings, as the NLLB repos ship them (no token here contains a space).
          merges: merges.map(([a, b]) => `${a} ${b}`),
        }
      : {
          type: 'Unigram',
          unk_id: 3,
          byte_fallback: false,
          vocab: (layout ? byId : vocab).map((t, id): [string, number] => [t, addedIds.has(id) ? 0 : score(t, id)]),
        };
  const addedToken = (id: number, content: string) => ({
    id,
    content,
    single_word: false,
    lstrip: content === MASK,
    rstrip: false,
    normalized: content === MASK,
    special: true,
  });
  const defaultSource = languages.includes('eng_Latn') ? 'eng_Latn' : languages[0]!;
  const defaultSourceId = added.find((a) => a.content === defaultSource)!.id;
  const metaspace = { type: 'Metaspace', replacement: SPACE, prepend_scheme: 'always', split: true };
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [...SPECIAL_TOKENS.map((t, i) => addedToken(i, t)), ...added.map((a) => addedToken(a.id, a.content))],
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'Precompiled', precompiled_charsmap: Buffer.from(precompiledCharsmap()).toString('base64') },
        { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
      ],
    },
    pre_tokenizer: metaspace,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: defaultSource, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: defaultSource, type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 0 } },
        { SpecialToken: { id: '</s>', type_id: 0 } },
      ],
      special_tokens: {
        '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] },
        [defaultSource]: { id: defaultSource, ids: [defaultSourceId], tokens: [defaultSource] },
      },
    },
    decoder: metaspace,
    model,
  };
  const maskToken = { __type: 'AddedToken', content: MASK, lstrip: true, normalized: true, rstrip: false, single_word: false };
  const specialTokensMap = {
    additional_special_tokens: [...languages],
    bos_token: '<s>',
    cls_token: '<s>',
    eos_token: '</s>',
    mask_token: maskToken,
    pad_token: '<pad>',
    sep_token: '</s>',
    unk_token: '<unk>',
  };
  const tokenizerConfig = {
    added_tokens_decoder: Object.fromEntries(tokenizerJson.added_tokens.map(({ id, ...rest }) => [String(id), rest])),
    ...specialTokensMap,
    clean_up_tokenization_spaces: true,
    legacy_behaviour: false,
    model_max_length: 1024,
    sp_model_kwargs: {},
    src_lang: null,
    tgt_lang: null,
    tokenizer_class: 'NllbTokenizer',
  };
  return { tokenizerJson, tokenizerConfig, specialTokensMap, tokens: layout ? byId : [...vocab, ...added.map((a) => a.content)] };
}

export function writeNllbTokenizerFiles(dir: string, tokenizer: DemoTokenizer): void {
  fs.mkdirSync(dir, { recursive: true });
  const write = (name: string, value: unknown, indent?: number) => fs.writeFileSync(path.join(dir, name), `${JSON.stringify(value, null, indent)}\n`);
  write('tokenizer.json', tokenizer.tokenizerJson);
  write('tokenizer_config.json', tokenizer.tokenizerConfig, 2);
  write('special_tokens_map.json', tokenizer.specialTokensMap, 2);
}
