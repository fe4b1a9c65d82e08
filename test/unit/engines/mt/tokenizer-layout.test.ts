/**
 * The NLLB tokenizer builder padded to a checkpoint's id layout (what the real-size pack's NLLB-600M uses, at
 * 256,206 ids): every id up to the size has a token, languages and `<mask>` sit at the layout's ids, filler
 * pieces are valid BPE / Unigram pieces, and the pure-JS runtime agrees with the Rust library on it.
 * A small layout here (6,000 ids) keeps the test fast; the builder is the same.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { TextTokenizer } from '../../../../src/engines/text/tokenizer.js';
import { buildNllbTokenizer, type NllbVocabularyLayout } from '../../../../models/generator/demo-tokenizers.js';
import { DEMO_GLOSSARY, DEMO_LANGUAGES } from '../../../../models/generator/demo-nllb.js';

const require = createRequire(import.meta.url);
const { Tokenizer: RustTokenizer } = require('@anush008/tokenizers') as typeof import('@anush008/tokenizers');

const WORDS = DEMO_GLOSSARY.flatMap((e) => [e.bam, e.fra, e.eng]);
const LAYOUT: NllbVocabularyLayout = { size: 6_000, languageIds: { bam_Latn: 5_022, eng_Latn: 5_047, fra_Latn: 5_057 }, maskId: 5_203 };
const TEXT = ['Kunu, n ye muso ye sugu la ka malo san.', "L'enfant boit de l'eau aujourd'hui !", 'sɔgɔma ɲuman, aw ni ce — kɛnɛya bɛ?'];

describe.each(['bpe', 'unigram'] as const)('the %s NLLB tokenizer padded to a checkpoint layout', (type) => {
  const built = buildNllbTokenizer(type, WORDS, DEMO_LANGUAGES, LAYOUT);
  const js = TextTokenizer.fromJson(built.tokenizerJson, built.tokenizerConfig);
  const rust = RustTokenizer.fromString(JSON.stringify(built.tokenizerJson));

  it('has a token for every id up to the size, each id once', () => {
    expect(built.tokens).toHaveLength(LAYOUT.size);
    expect(built.tokens.every((t) => typeof t === 'string' && t.length > 0)).toBe(true);
    expect(new Set(built.tokens).size).toBe(LAYOUT.size);
  });

  it('puts the languages and <mask> at the layout ids, and the specials at 0–3, in both runtimes', () => {
    const expected: Record<string, number> = { ...LAYOUT.languageIds, '<mask>': LAYOUT.maskId, '<s>': 0, '<pad>': 1, '</s>': 2, '<unk>': 3 };
    for (const [token, id] of Object.entries(expected)) {
      expect(js.tokenId(token)).toBe(id);
      expect(rust.tokenToId(token)).toBe(id);
      expect(built.tokens[id]).toBe(token);
    }
    expect(js.addedTokens().map((t) => t.id)).toEqual([0, 1, 2, 3, 5_022, 5_047, 5_057, 5_203]);
  });

  it('keeps glossary words whole and encodes text as the Rust library does, with no unknown token', async () => {
    for (const word of WORDS) expect(js.tokenize(word)).toEqual([`▁${word}`]);
    for (const line of TEXT) {
      const ids = js.encode(line);
      expect(ids).toEqual((await rust.encode(line, null, { addSpecialTokens: false })).getIds());
      expect(ids).not.toContain(3);
    }
  });

  it('uses filler pieces for words outside the glossary (sub-word pieces, not one token per letter)', () => {
    const pieces = js.tokenize('Bamakokaw');
    expect(pieces.length).toBeLessThan([...'Bamakokaw'].length);
    expect(pieces.join('')).toBe('▁Bamakokaw');
  });

  it('decodes every id the model can emit, fillers included', async () => {
    const all = Array.from({ length: LAYOUT.size }, (_, id) => id);
    const text = js.decode(all, { skipSpecialTokens: true });
    expect(text.length).toBeGreaterThan(LAYOUT.size);
    expect(await rust.decode(all.slice(4_000), true)).toBe(js.decode(all.slice(4_000), { cleanUpSpaces: false }).replace(/^ /, ''));
  });
});

describe('NLLB vocabulary layouts that cannot hold the vocabulary', () => {
  it('refuses language ids inside the word pieces, outside the size or shared', () => {
    const build = (layout: NllbVocabularyLayout) => () => buildNllbTokenizer('bpe', WORDS, DEMO_LANGUAGES, layout);
    expect(build({ ...LAYOUT, languageIds: { ...LAYOUT.languageIds, bam_Latn: 10 } })).toThrow(/past the \d+ word pieces/);
    expect(build({ ...LAYOUT, maskId: LAYOUT.size })).toThrow(/inside the vocabulary size/);
    expect(build({ ...LAYOUT, maskId: LAYOUT.languageIds.fra_Latn! })).toThrow(/distinct/);
    expect(build({ ...LAYOUT, languageIds: { bam_Latn: 5_022 } })).toThrow(/Language and mask ids/);
  });
});
