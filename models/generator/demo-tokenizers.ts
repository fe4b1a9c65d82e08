/**
 * NLLB-style `tokenizer.json` files for the demo translation models, in both model types that Hugging Face
 * tokenizers ship for NLLB/M2M100-like checkpoints: BPE and Unigram. Everything around the model is NLLB's
 * real pipeline: a Precompiled (sentencepiece nmt_nfkc) normaliser followed by `Replace(" {2,}", " ")`, a
 * Metaspace pre-tokeniser (`▁`, prepend_scheme always), a TemplateProcessing post-processor
 * `[src_lang] $A </s>`, `<s> <pad> </s> <unk>` at ids 0–3, language codes and `<mask>` as added special tokens
 * after the vocabulary, and a Metaspace decoder. Also writes `tokenizer_config.json` and
 * `special_tokens_map.json` as HF ships them. Deterministic: same bytes every run.
 */
import fs from 'node:fs';
import path from 'node:path';

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

/** nmt_nfkc as the JS runtime approximates it: drop controls, odd spaces → space, then NFKC. */
export function nmtNfkc(text: string): string {
  return text
    .replace(/[\u0001-\u0008\u000B\u000E-\u001F\u007F\u008F\u009F]/g, '')
    .replace(/[\u0009\u000A\u000C\u000D\u00A0\u1680\u2000-\u200F\u2028\u2029\u202F\u205F\u2581\u3000\uFEFF\uFFFD]/g, ' ')
    .normalize('NFKC');
}

/**
 * Code points the charsmap covers: Latin, IPA, combining marks, Greek/Cyrillic, Latin Extended Additional,
 * punctuation, super/subscripts, letterlike and number forms, ligatures, small and fullwidth forms. These
 * mappings are fixed by Unicode's normalisation stability policy, so the bytes do not drift with Node's ICU.
 */
const CHARSMAP_RANGES: Array<[number, number]> = [
  [0x0001, 0x05ff], [0x1680, 0x1680], [0x1d00, 0x1fff], [0x2000, 0x2bff], [0x3000, 0x3000],
  [0xfb00, 0xfb4f], [0xfe00, 0xfe6f], [0xfeff, 0xfeff], [0xff00, 0xffef], [0xfffd, 0xfffd],
];

/**
 * A real sentencepiece `precompiled_charsmap`: u32 trie size in bytes, a darts-clone double-array trie over
 * the UTF-8 bytes of each source string, then the NUL-terminated replacement strings the trie's values point
 * into. Keys: every covered code point that nmt_nfkc changes, and the NFD spelling of every covered
 * precomposed character (so "e\u0301" composes to "é", as nmt_nfkc does).
 */
let charsmapCache: Uint8Array | undefined;

export function precompiledCharsmap(): Uint8Array {
  charsmapCache ??= buildCharsmap();
  return charsmapCache;
}

function buildCharsmap(): Uint8Array {
  const mapping = new Map<string, string>();
  for (const [from, to] of CHARSMAP_RANGES) {
    for (let cp = from; cp <= to; cp++) {
      const char = String.fromCodePoint(cp);
      const normalized = nmtNfkc(char);
      if (normalized !== char) mapping.set(char, normalized);
      const decomposed = char.normalize('NFD');
      if (decomposed !== char && nmtNfkc(decomposed) !== decomposed) mapping.set(decomposed, nmtNfkc(decomposed));
    }
  }
  const encoder = new TextEncoder();
  const keys = [...mapping.keys()].sort();
  // Replacement strings, deduplicated, NUL-terminated; values are byte offsets into this blob.
  const blobParts: Uint8Array[] = [];
  const offsets = new Map<string, number>();
  let blobLength = 0;
  for (const key of keys) {
    const value = mapping.get(key)!;
    if (offsets.has(value)) continue;
    offsets.set(value, blobLength);
    const bytes = encoder.encode(`${value}\0`);
    blobParts.push(bytes);
    blobLength += bytes.length;
  }
  const units = buildDoubleArray(keys.map((key) => ({ bytes: encoder.encode(key), value: offsets.get(mapping.get(key)!)! })));
  const out = new Uint8Array(4 + units.length * 4 + blobLength);
  const view = new DataView(out.buffer);
  view.setUint32(0, units.length * 4, true);
  units.forEach((unit, i) => view.setUint32(4 + i * 4, unit, true));
  let at = 4 + units.length * 4;
  for (const part of blobParts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

interface TrieNode {
  children: Map<number, TrieNode>;
  value: number | undefined;
}

/**
 * darts-clone units as sentencepiece reads them: label in bits 0–7, has-leaf in bit 8, offset (to the
 * children's base, XOR-relative to the unit's own position) in bits 10–30; a leaf unit at the node's base
 * holds the value with bit 31 set. Bases are unique, so a label can never match from a foreign parent.
 */
function buildDoubleArray(entries: Array<{ bytes: Uint8Array; value: number }>): number[] {
  const root: TrieNode = { children: new Map(), value: undefined };
  for (const { bytes, value } of entries) {
    let node = root;
    for (const byte of bytes) {
      let child = node.children.get(byte);
      if (!child) node.children.set(byte, (child = { children: new Map(), value: undefined }));
      node = child;
    }
    node.value = value;
  }
  const units: number[] = [0];
  const used = new Set<number>([0]);
  const usedBases = new Set<number>();
  let searchFrom = 256;
  const queue: Array<{ node: TrieNode; pos: number; label: number }> = [{ node: root, pos: 0, label: 0 }];
  for (let q = 0; q < queue.length; q++) {
    const { node, pos, label } = queue[q]!;
    const labels = [...node.children.keys()].sort((a, b) => a - b);
    const slots = node.value !== undefined ? [0, ...labels] : labels;
    let base = searchFrom;
    while (usedBases.has(base) || slots.some((s) => used.has(base ^ s))) base++;
    while (used.has(searchFrom)) searchFrom++;
    usedBases.add(base);
    const offset = base ^ pos;
    if (offset >= 1 << 21) throw new Error('charsmap trie too large for plain offsets');
    units[pos] = ((offset << 10) | (node.value !== undefined ? 1 << 8 : 0) | label) >>> 0;
    for (const s of slots) used.add(base ^ s);
    if (node.value !== undefined) units[base] = (node.value | 0x80000000) >>> 0;
    for (const l of labels) queue.push({ node: node.children.get(l)!, pos: base ^ l, label: l });
  }
  // Any base XOR any byte must stay inside the array: pad to the end of the last 256-unit block.
  const length = (Math.max(...units.keys()) | 0xff) + 1;
  return Array.from({ length }, (_, i) => units[i] ?? 0);
}

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
 * Builds the vocabulary: specials, `▁`, each character alone and after `▁`, then every `▁word` of `words`
 * with all its prefixes (the BPE merge chain that builds it). BPE merges and Unigram scores both make whole
 * words win, so a glossary word is one token in either model type.
 */
export function buildNllbTokenizer(type: DemoTokenizerType, words: readonly string[], languages: readonly string[]): DemoTokenizer {
  const vocab: string[] = [...SPECIAL_TOKENS, SPACE];
  const kind = new Map<string, 'char' | 'spacechar' | 'word' | 'prefix'>();
  const add = (token: string, k: 'char' | 'spacechar' | 'word' | 'prefix') => {
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
  const base = { char: -9, spacechar: -8, word: -3, prefix: -14 };
  const model =
    type === 'bpe'
      ? {
          type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
          fuse_unk: true, byte_fallback: false, ignore_merges: false,
          vocab: Object.fromEntries(vocab.map((t, i) => [t, i])),
          // Legacy "a b" merge strings, as the NLLB repos ship them (no token here contains a space).
          merges: merges.map(([a, b]) => `${a} ${b}`),
        }
      : {
          type: 'Unigram', unk_id: 3, byte_fallback: false,
          vocab: vocab.map((t, i): [string, number] => [t, i < 4 ? 0 : t === SPACE ? -7.5 : base[kind.get(t)!] - 0.01 * jitter(i)]),
        };
  const added = [...languages, MASK].map((content, i) => ({ content, id: vocab.length + i }));
  const addedToken = (id: number, content: string) => ({
    id, content, single_word: false, lstrip: content === MASK, rstrip: false, normalized: content === MASK, special: true,
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
        { SpecialToken: { id: defaultSource, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } },
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
    additional_special_tokens: [...languages], bos_token: '<s>', cls_token: '<s>', eos_token: '</s>',
    mask_token: maskToken, pad_token: '<pad>', sep_token: '</s>', unk_token: '<unk>',
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
  return { tokenizerJson, tokenizerConfig, specialTokensMap, tokens: [...vocab, ...added.map((a) => a.content)] };
}

export function writeNllbTokenizerFiles(dir: string, tokenizer: DemoTokenizer): void {
  fs.mkdirSync(dir, { recursive: true });
  const write = (name: string, value: unknown, indent?: number) => fs.writeFileSync(path.join(dir, name), `${JSON.stringify(value, null, indent)}\n`);
  write('tokenizer.json', tokenizer.tokenizerJson);
  write('tokenizer_config.json', tokenizer.tokenizerConfig, 2);
  write('special_tokens_map.json', tokenizer.specialTokensMap, 2);
}
