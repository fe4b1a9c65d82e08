/**
 * The text-stream → phrases splitter: whatever the piece boundaries, the phrases released are those the REST
 * path plans for the whole text (chunkText), and a phrase is released as soon as it is certain.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chunkText, FIRST_CHUNK_MAX, type TextChunk } from '../../../src/engines/tts/text-chunker.js';
import { TextPhraseSplitter } from '../../../src/voice/text-phrase-splitter.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 300);

/** Words, punctuation, closing quotes, digits, odd whitespace, ɛ, a combining accent and an emoji (a surrogate pair). */
const token = fc.constantFrom(
  'i',
  'ni',
  'ce',
  'bɛ',
  'sugu',
  'la',
  'a',
  'kɔnɔntɔn',
  'tile',
  'e\u0301',
  '😀',
  '123',
  '.',
  ',',
  '?',
  '!',
  '…',
  '»',
  '"',
  ')',
  ' ',
  '  ',
  '\n',
  '\t',
  ' » ',
  '. ',
  '? "',
);
/** Mostly words and spaces, so that phrases also end at the length limits (FIRST_CHUNK_MAX first, then 200), not only at sentences. */
const longToken = fc.oneof({ weight: 30, arbitrary: fc.constantFrom('sugu ', 'kɔnɔntɔn ', 'a ', 'bɛ ', 'la, ') }, { weight: 1, arbitrary: token });
const text = fc.oneof(fc.array(token, { maxLength: 120 }), fc.array(longToken, { maxLength: 200 })).map((parts) => parts.join(''));

/** Cuts `s` at `cuts` (code-unit positions; a surrogate pair may be split, as a network may). */
function pieces(s: string, cuts: number[]): string[] {
  const at = [...new Set(cuts.map((c) => c % (s.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const c of at) {
    out.push(s.slice(from, c));
    from = c;
  }
  out.push(s.slice(from));
  return out;
}

function streamed(parts: string[]): TextChunk[] {
  const splitter = new TextPhraseSplitter();
  const out: TextChunk[] = [];
  for (const p of parts) out.push(...splitter.push(p));
  out.push(...splitter.flush());
  expect(splitter.pendingCharacters).toBe(0);
  return out;
}

describe('TextPhraseSplitter', () => {
  it('random piece boundaries give the phrases of the whole text', () => {
    fc.assert(
      fc.property(text, fc.array(fc.nat(), { maxLength: 40 }), (s, cuts) => {
        expect(streamed(pieces(s, cuts))).toEqual(chunkText(s));
      }),
      { numRuns: RUNS, seed: 17 },
    );
  });

  it('one character at a time gives the phrases of the whole text', () => {
    fc.assert(
      fc.property(text, (s) => {
        expect(streamed([...s])).toEqual(chunkText(s));
      }),
      { numRuns: RUNS, seed: 18 },
    );
  });

  it('flush ends a text: each flushed part is phrased as a text of its own', () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { maxLength: 20 }), (texts, cuts) => {
        const splitter = new TextPhraseSplitter();
        const out: TextChunk[] = [];
        for (const s of texts) {
          for (const p of pieces(s, cuts)) out.push(...splitter.push(p));
          out.push(...splitter.flush());
        }
        expect(out).toEqual(texts.flatMap((s) => chunkText(s)));
      }),
      { numRuns: RUNS, seed: 19 },
    );
  });

  it('a sentence is released as soon as the next word begins, before that word is complete', () => {
    const splitter = new TextPhraseSplitter();
    expect(splitter.push('i ni ce. ')).toEqual([]); // the next word could still be a closing quote
    expect(splitter.push('»')).toEqual([]);
    expect(splitter.push(' a')).toEqual([{ text: 'i ni ce. »', characters: 11 }]);
    expect(splitter.pendingCharacters).toBe(1);
  });

  it('a phrase longer than the limit is cut once the word after the limit is complete', () => {
    const splitter = new TextPhraseSplitter();
    const words = Array.from({ length: 12 }, (_, i) => `sugu${i}`);
    const released: TextChunk[] = [];
    for (const w of words) released.push(...splitter.push(`${w} `));
    // The first phrase is at most FIRST_CHUNK_MAX characters (the first-audio rule) and left before the text ended.
    expect(released.length).toBeGreaterThan(0);
    expect(released[0]!.text.length).toBeLessThanOrEqual(FIRST_CHUNK_MAX);
    expect([...released, ...splitter.flush()]).toEqual(chunkText(words.join(' ') + ' '));
  });

  it('whitespace alone releases nothing', () => {
    const splitter = new TextPhraseSplitter();
    expect(splitter.push('   ')).toEqual([]);
    expect(splitter.flush()).toEqual([]);
  });
});
