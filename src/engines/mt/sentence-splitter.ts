/**
 * Splits text into sentences for translation and joins the translations back. NLLB is trained on single
 * sentences: long inputs are translated sentence by sentence (as one batch) and re-joined with the original
 * breaks, so paragraphs survive. Pure and language-light: sentence-final punctuation (with closing quotes or
 * brackets) followed by whitespace ends a sentence unless the word before it is a common abbreviation or a
 * single capital initial; a line break always does; an over-long sentence is cut at a space.
 */

export interface SentencePiece {
  text: string;
  /** What joins this sentence to the next: a space, or the original line breaks. Empty after the last one. */
  joiner: string;
}

const ABBREVIATIONS = new Set([
  'm',
  'mm',
  'mme',
  'mmes',
  'mlle',
  'mr',
  'mrs',
  'ms',
  'dr',
  'pr',
  'prof',
  'st',
  'ste',
  'cf',
  'etc',
  'vs',
  'no',
  'nº',
  'p',
  'pp',
  'vol',
  'env',
  'av',
  'apr',
  'j.-c',
  'e.g',
  'i.e',
  'ex',
  'fig',
  'art',
  'éd',
  'ed',
]);

/** End punctuation, then optional closing quotes/brackets (French puts a space before »), then whitespace. */
const BOUNDARY = /[.!?…]+(?:[ \u00a0\u202f]*[»”"’')\]]+)?(?=\s)|\n/gu;

export const DEFAULT_MAX_SENTENCE_CHARS = 400;

function isAbbreviation(before: string): boolean {
  const word = /(\S+)$/u.exec(before)?.[1]?.replace(/^[«“"'(\[]+/u, '') ?? '';
  if (word === '') return false;
  return ABBREVIATIONS.has(word.toLowerCase()) || /^\p{Lu}$/u.test(word);
}

/** Cuts a sentence longer than `maxChars` at the last space before the limit (or hard, if it has none). */
function cutLong(sentence: string, maxChars: number): string[] {
  const parts: string[] = [];
  let rest = sentence;
  while (rest.length > maxChars) {
    const space = rest.lastIndexOf(' ', maxChars);
    const at = space > 0 ? space : maxChars;
    parts.push(rest.slice(0, at).trim());
    rest = rest.slice(at).trim();
  }
  if (rest.length > 0) parts.push(rest);
  return parts;
}

export function splitSentences(text: string, options: { maxChars?: number } = {}): SentencePiece[] {
  const maxChars = options.maxChars ?? DEFAULT_MAX_SENTENCE_CHARS;
  const pieces: SentencePiece[] = [];
  const push = (raw: string, gap: string) => {
    const sentence = raw.trim();
    const joiner = gap.includes('\n') ? gap.replace(/[^\n]/g, '') : ' ';
    if (sentence === '') {
      // A blank line adds its break to the previous sentence's joiner.
      const last = pieces.at(-1);
      if (last && joiner.includes('\n')) last.joiner += '\n';
      return;
    }
    for (const part of cutLong(sentence, maxChars)) pieces.push({ text: part, joiner: ' ' });
    pieces.at(-1)!.joiner = joiner;
  };
  let start = 0;
  for (const match of text.matchAll(BOUNDARY)) {
    if (match.index < start) continue; // a line break already taken as the gap after a sentence
    const end = match.index + match[0].length;
    if (match[0] !== '\n' && isAbbreviation(text.slice(start, match.index))) continue;
    const gap = /^\s*/u.exec(text.slice(end))![0];
    push(text.slice(start, end), match[0] === '\n' ? `\n${gap}` : gap);
    start = end + gap.length;
  }
  push(text.slice(start), '');
  if (pieces.length > 0) pieces.at(-1)!.joiner = '';
  return pieces;
}

/** Joins translated sentences with the joiners of the pieces they came from. */
export function joinSentences(pieces: readonly SentencePiece[], translations: readonly string[]): string {
  if (pieces.length !== translations.length) throw new Error(`joinSentences: ${pieces.length} pieces, ${translations.length} translations`);
  return translations.map((t, i) => t + (i < pieces.length - 1 ? pieces[i]!.joiner || ' ' : '')).join('');
}
