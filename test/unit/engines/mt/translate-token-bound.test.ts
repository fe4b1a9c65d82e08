/** The token bound the token-billed translation model holds: per sentence, what it can read and write. */
import { describe, expect, it } from 'vitest';
import { maxTranslateTokens, translateLimits } from '../../../../src/engines/mt/translate-token-bound.js';

describe('maxTranslateTokens', () => {
  it('per sentence: min(maxSourceTokens, 2 + 4 × (characters + 1)) read, maxLength − 2 written', () => {
    const info = { maxLength: 200, maxSourceTokens: 512, maxSentenceChars: 400 };
    expect(maxTranslateTokens('malo', info)).toBe(2 + 4 * 5 + 198);
    expect(maxTranslateTokens('N bɛ taa. I bɛ na?', info)).toBe(2 + 4 * 10 + 198 + (2 + 4 * 9 + 198));
    expect(maxTranslateTokens('a '.repeat(190).trim(), info)).toBe(512 + 198); // capped by the source limit
  });

  it('counts characters after NFKC, which can expand them (ﬁ → fi)', () => {
    expect(maxTranslateTokens('ﬁ', {})).toBe(2 + 4 * 3 + 198);
  });

  it('follows the limits the engine reports, and the runner defaults when it reports none', () => {
    expect(translateLimits({})).toEqual({ maxSentenceChars: 400, maxSourceTokens: 512, maxLength: 200 });
    expect(maxTranslateTokens('malo', { maxLength: 10, maxSourceTokens: 8 })).toBe(8 + 8);
    expect(maxTranslateTokens('aaaa aaaa', { maxSentenceChars: 4 })).toBe(2 * (2 + 4 * 5 + 198)); // cut into 2
  });

  it('bounds the written tokens by ⌈a × read⌉ + b where the engine reports maxLengthA and maxLengthB', () => {
    const info = { maxLength: 200, maxSourceTokens: 512, maxSentenceChars: 400, maxLengthA: 3, maxLengthB: 10 };
    const read = 2 + 4 * 5;
    expect(maxTranslateTokens('malo', info)).toBe(read + Math.min(198, 3 * read + 10));
    expect(maxTranslateTokens('a '.repeat(190).trim(), info)).toBe(512 + 198); // max_length still caps it
    expect(translateLimits({ maxLengthA: -1, maxLengthB: 10 })).not.toHaveProperty('maxLengthA'); // nonsense: ignored
  });
});
