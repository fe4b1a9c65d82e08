/**
 * The most tokens one `translate` call of the NLLB runner can count for a text (its `inputTokens +
 * outputTokens`), computed before the call from the limits the runner reports in its info: the token-billed
 * translation model holds this much before it runs. Per sentence, as the runner splits the text:
 * - read: `[src_lang] tokens </s>`, at most `maxSourceTokens` (the runner truncates), and at most 4 tokens
 *   per NFKC-normalised character plus one for the leading `▁` (a byte-fallback tokenizer spends at most
 *   4 byte tokens on a character; merges only lower the count) plus the 2 around them;
 * - written: at most `maxLength − 2` (the decoder prompt takes 2 of `maxLength`), `</s>` included, and where the
 *   engine reports an output-length bound (`maxLengthA`, `maxLengthB`), at most ⌈a × read⌉ + b.
 */
import { DEFAULT_MAX_SENTENCE_CHARS, splitSentences } from './sentence-splitter.js';

export interface TranslateLimits {
  maxSentenceChars: number;
  maxSourceTokens: number;
  maxLength: number;
  /** The runner's output-length bound ⌈a × source tokens⌉ + b; absent: none beyond maxLength. */
  maxLengthA?: number;
  maxLengthB?: number;
}

/** The runner's own defaults, for an engine that does not report its limits. */
const DEFAULT_LIMITS: TranslateLimits = { maxSentenceChars: DEFAULT_MAX_SENTENCE_CHARS, maxSourceTokens: 512, maxLength: 200 };

const BYTES_PER_CHARACTER = 4;

function limit(info: Record<string, unknown>, name: 'maxSentenceChars' | 'maxSourceTokens' | 'maxLength'): number {
  const value = info[name];
  return Number.isInteger(value) && (value as number) > 0 ? (value as number) : DEFAULT_LIMITS[name];
}

export function translateLimits(info: Record<string, unknown>): TranslateLimits {
  const limits: TranslateLimits = {
    maxSentenceChars: limit(info, 'maxSentenceChars'),
    maxSourceTokens: limit(info, 'maxSourceTokens'),
    maxLength: limit(info, 'maxLength'),
  };
  const [a, b] = [info.maxLengthA, info.maxLengthB];
  if (typeof a === 'number' && Number.isFinite(a) && a >= 0 && Number.isInteger(b) && (b as number) >= 0)
    Object.assign(limits, { maxLengthA: a, maxLengthB: b });
  return limits;
}

export function maxTranslateTokens(text: string, info: Record<string, unknown>): number {
  const limits = translateLimits(info);
  let total = 0;
  for (const sentence of splitSentences(text, { maxChars: limits.maxSentenceChars })) {
    const characters = [...sentence.text.normalize('NFKC')].length;
    const read = Math.min(limits.maxSourceTokens, 2 + BYTES_PER_CHARACTER * (characters + 1));
    const written = Math.max(0, limits.maxLength - 2);
    // The bound grows with the source, so the most `read` can be bounds what the runner lets it write.
    total += read + (limits.maxLengthA === undefined ? written : Math.min(written, Math.ceil(limits.maxLengthA * read) + limits.maxLengthB!));
  }
  return total;
}
