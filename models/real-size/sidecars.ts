/**
 * The real-size pack's sidecars that come from TypeScript rather than pack.py: NLLB-600M's `tokenizer.json`,
 * `tokenizer_config.json` and `special_tokens_map.json`, made by the demo pack's NLLB tokenizer builder
 * (models/generator/demo-tokenizers.ts: nmt_nfkc Precompiled normaliser, Metaspace, BPE with merges,
 * TemplateProcessing) padded to the checkpoint's 256,206 ids with NLLB's ids for the three languages Kuma serves.
 *
 * Why the size matters: loading a 256k-piece BPE vocabulary with its merges is part of what a real NLLB costs
 * at start-up, and every id the model can emit must decode. Which words become whole pieces only changes how
 * many tokens a sentence makes: words of real Bambara and French sentences (FLORES-200 and Bayelemabaga from
 * ../shared/data, when that folder is there; CC BY-SA 4.0, read and never copied into the repository), then
 * the demo glossary, then filler pieces (short letter strings, each one BPE merge, as sub-word pieces are).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildNllbTokenizer, DEMO_CHARACTERS, writeNllbTokenizerFiles, type NllbVocabularyLayout } from '../generator/demo-tokenizers.js';
import { DEMO_GLOSSARY, DEMO_LANGUAGES } from '../generator/demo-nllb.js';
import { nmtNfkc } from '../generator/precompiled-charsmap.js';
import type { PackedModel } from './pack-manifest.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SHARED_DATA = path.resolve(REPO, '..', 'shared', 'data');

/** facebook/nllb-200-distilled-600M: 4 specials + sentencepiece pieces, 202 languages from 256001, `<mask>` 256203, embedding rows to 256206. */
export const NLLB_LAYOUT: NllbVocabularyLayout = {
  size: 256_206,
  languageIds: { bam_Latn: 256_022, eng_Latn: 256_047, fra_Latn: 256_057 },
  maskId: 256_203,
};

/** At most this many corpus words become whole pieces (their prefixes too), leaving most of the vocabulary to sub-word fillers as in NLLB's. */
const MAX_CORPUS_WORDS = 40_000;

/** Text files of the shared data sets (Bambara and French; no English side exists there). */
function corpusTexts(dataDir: string): Array<{ file: string; text: string }> {
  const files = ['flores200-bam-fra/flores.bam_Latn.txt', 'flores200-bam-fra/flores.fra_Latn.txt', 'bayelemabaga-test/test.tsv'];
  return files
    .map((f) => path.join(dataDir, f))
    .filter((f) => fs.existsSync(f))
    .map((file) => ({ file, text: fs.readFileSync(file, 'utf8') }));
}

/**
 * Words of the corpus, most frequent first (ties alphabetical, so the list is the same on every machine that
 * has the same files), keeping only words whose characters the tokenizer's alphabet covers.
 */
export function corpusWords(dataDir = SHARED_DATA, limit = MAX_CORPUS_WORDS): { words: string[]; files: string[] } {
  const counts = new Map<string, number>();
  const alphabet = new Set(DEMO_CHARACTERS);
  const texts = corpusTexts(dataDir);
  for (const { text } of texts) {
    for (const match of nmtNfkc(text).matchAll(/[\p{L}\p{M}]+(?:['’][\p{L}\p{M}]+)*/gu)) {
      const word = match[0];
      if ([...word].every((c) => alphabet.has(c))) counts.set(word, (counts.get(word) ?? 0) + 1);
    }
  }
  const words = [...counts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, limit)
    .map(([w]) => w);
  return { words, files: texts.map((t) => path.relative(dataDir, t.file)) };
}

function readVocabSize(dir: string): number {
  const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as { vocab_size?: unknown };
  if (config.vocab_size !== NLLB_LAYOUT.size)
    throw new Error(`${dir}/config.json: vocab_size ${String(config.vocab_size)}, the NLLB tokenizer layout has ${NLLB_LAYOUT.size}`);
  return config.vocab_size;
}

/** Writes the TypeScript-made sidecars of every packed model that needs them (deterministic; rewritten each run). */
export function writeTsSidecars(out: string, packed: PackedModel[]): void {
  for (const model of packed.filter((m) => m.engine === 'nllb')) {
    const dir = path.join(out, model.dir);
    readVocabSize(dir);
    const started = Date.now();
    const corpus = corpusWords();
    const glossary = DEMO_GLOSSARY.flatMap((e) => [e.bam, e.fra, e.eng]);
    const tokenizer = buildNllbTokenizer('bpe', [...corpus.words, ...glossary], DEMO_LANGUAGES, NLLB_LAYOUT);
    writeNllbTokenizerFiles(dir, tokenizer);
    const from = corpus.files.length ? `${corpus.words.length} words of ${corpus.files.join(', ')}` : `no corpus (${SHARED_DATA} is absent)`;
    console.log(`${model.dir}: tokenizer with ${tokenizer.tokens.length} ids (${from}, the demo glossary, filler pieces) in ${Date.now() - started} ms`);
  }
}
