/** Text normalisation and chunking for TTS: boundaries, the short first chunk, whole words, exact character accounting. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CHUNK_MAX, FIRST_CHUNK_MAX, PHRASE_GROWTH, chunkText, normalizeText } from '../../../../src/engines/tts/text-chunker.js';

const codePoints = (s: string) => [...s].length;
const total = (input: string) => chunkText(input).reduce((n, c) => n + c.characters, 0);

/** Deterministic Bambara-like filler: words of 1–12 letters with commas and full stops here and there. */
function longText(words: number): string {
  const letters = 'abcdeɛfghijklmnɲŋoɔprstuwyz';
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    let w = '';
    for (let n = 1 + (next() % 12); n > 0; n--) w += letters[next() % letters.length];
    const r = next() % 20;
    out.push(r === 0 ? `${w}.` : r === 1 ? `${w},` : w);
  }
  return out.join(' ');
}

describe('normalizeText', () => {
  it('composes to NFC, collapses whitespace and trims', () => {
    expect(normalizeText('  a\u0300  b\n\tc  ')).toBe('\u00e0 b c');
  });

  it('keeps Bambara letters and capitals, and maps Greek epsilon to Latin ɛ', () => {
    expect(normalizeText('Ɛ ɛ ɔ Ɔ ɲ Ɲ ŋ Ŋ')).toBe('Ɛ ɛ ɔ Ɔ ɲ Ɲ ŋ Ŋ');
    expect(normalizeText('kεnε')).toBe('kɛnɛ');
  });
});

describe('chunkText', () => {
  it('ends a chunk at every sentence end', () => {
    expect(chunkText('Aw ni ce. I ka kɛnɛ wa? Tɔɔrɔ si tɛ!').map((c) => c.text)).toEqual(['Aw ni ce.', 'I ka kɛnɛ wa?', 'Tɔɔrɔ si tɛ!']);
  });

  it('keeps a sentence that fits in one chunk whole, commas included', () => {
    expect(chunkText('I ni ce, i ka kɛnɛ?').map((c) => c.text)).toEqual(['I ni ce, i ka kɛnɛ?']);
    expect(chunkText('Aw ni ce. Ne bɛ taa sugu la.').map((c) => c.text)).toEqual(['Aw ni ce.', 'Ne bɛ taa sugu la.']);
    // A later sentence longer than twice the text before it is cut at its phrase boundaries (PHRASE_GROWTH).
    expect(chunkText('Aw ni ce. I ka kɛnɛ wa, n teri, ne bɛ taa?').map((c) => c.text)).toEqual(['Aw ni ce.', 'I ka kɛnɛ wa,', 'n teri, ne bɛ taa?']);
  });

  it('cuts an over-long first sentence at its last phrase boundary within 20 characters', () => {
    const text = 'Aw ni ce, i ka kɛnɛ wa, n teri, ne bɛ taa sugu la sisan ni i sɔnna.';
    const chunks = chunkText(text);
    expect(chunks.map((c) => c.text)).toEqual(['Aw ni ce,', 'i ka kɛnɛ wa,', 'n teri, ne bɛ taa sugu la sisan ni i sɔnna.']);
    expect(chunkText('I ni ce, i ka wa, n teri.')[0]!.text).toBe('I ni ce, i ka wa,');
  });

  it('cuts between words when a phrase has no punctuation to cut at', () => {
    const text = 'Dugukolo ye fɛn ye min bɛ kɛ ka a ta ani ka a di mɔgɔw ma walasa u ka se ka baara kɛ';
    const chunks = chunkText(text);
    expect(chunks.map((c) => c.text)).toEqual(['Dugukolo ye fɛn ye', 'min bɛ kɛ ka a ta ani ka a di mɔgɔw', 'ma walasa u ka se ka baara kɛ']);
  });

  it('keeps the first chunk within 20 characters and later ones within 200, never splitting a word', () => {
    const text = longText(600);
    const chunks = chunkText(text);
    expect(chunks.length).toBeGreaterThan(10);
    expect(codePoints(chunks[0]!.text)).toBeLessThanOrEqual(FIRST_CHUNK_MAX);
    for (const c of chunks.slice(1)) expect(codePoints(c.text)).toBeLessThanOrEqual(CHUNK_MAX);
    // Re-joining the chunks gives the normalised text back: every cut was at a space.
    expect(chunks.map((c) => c.text).join(' ')).toBe(normalizeText(text));
  });

  it('gives a word longer than the limit a chunk of its own rather than cutting it', () => {
    const long = 'a'.repeat(60);
    expect(chunkText(`${long} ye`).map((c) => c.text)).toEqual([long, 'ye']);
    expect(chunkText(`Ko ${long} ye`).map((c) => c.text)).toEqual(['Ko', long, 'ye']);
  });

  it('cuts a "word" longer than the later limit into pieces of that limit: no chunk is ever longer, for any text, and every character is counted', () => {
    expect(chunkText(`Ko ${'x'.repeat(450)} ye`).map((c) => codePoints(c.text))).toEqual([2, CHUNK_MAX, CHUNK_MAX, 53]);
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.string({ minLength: 1, maxLength: 8 }),
            fc.integer({ min: 1, max: 900 }).map((n) => 'ɛ'.repeat(n)),
          ),
          { maxLength: 12 },
        ),
        fc.constantFrom(' ', '  ', '\n'),
        (parts, space) => {
          const text = parts.join(space);
          const chunks = chunkText(text);
          for (const c of chunks) expect(codePoints(c.text)).toBeLessThanOrEqual(CHUNK_MAX);
          expect(chunks.reduce((n, c) => n + c.characters, 0)).toBe(chunks.length ? codePoints(text) : chunks.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('grows later chunks at most PHRASE_GROWTH times the text before them, for any text', () => {
    const word = fc.stringMatching(/^[a-zɛɔɲŋ]{1,12}[,.?]?$/);
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 120 }), fc.constantFrom(' ', '  ', '\n'), (words, space) => {
        const text = words.join(space);
        const chunks = chunkText(text);
        let before = 0;
        for (const [i, chunk] of chunks.entries()) {
          const length = codePoints(chunk.text);
          const limit = i === 0 ? FIRST_CHUNK_MAX : Math.min(CHUNK_MAX, Math.max(FIRST_CHUNK_MAX, PHRASE_GROWTH * before));
          // Over the limit only as one word that is longer on its own.
          if (length > limit) expect(chunk.text).not.toContain(' ');
          before += length;
        }
        expect(chunks.map((c) => c.text).join(' ')).toBe(normalizeText(text));
        expect(chunks.reduce((n, c) => n + c.characters, 0)).toBe(codePoints(text));
      }),
      { numRuns: 300 },
    );
  });

  it('honours custom limits', () => {
    const chunks = chunkText('a b c d e f g h', { firstMaxLength: 3, maxLength: 5 });
    expect(chunks.map((c) => c.text)).toEqual(['a b', 'c d e', 'f g h']);
  });

  it('does not treat punctuation inside a word as a boundary', () => {
    expect(chunkText('Ye 3.5 ye, a,b ni c.').map((c) => c.text)).toEqual(['Ye 3.5 ye, a,b ni c.']);
  });

  it('ends a sentence at punctuation set off by a space or followed by closing quotes', () => {
    expect(chunkText('I ka kɛnɛ wa ? Awɔ.').map((c) => c.text)).toEqual(['I ka kɛnɛ wa ?', 'Awɔ.']);
    expect(chunkText('A ko « i ka kɛnɛ wa? » O kɔ.').map((c) => c.text)).toEqual(['A ko « i ka kɛnɛ wa? »', 'O kɔ.']);
    expect(chunkText('A ko "tɔɔrɔ tɛ!" O kɔ.').map((c) => c.text)).toEqual(['A ko "tɔɔrɔ tɛ!"', 'O kɔ.']);
  });

  it('accounts for every input character, surrounding whitespace, combining marks and astral symbols included', () => {
    for (const input of ['  Aw ni ce.  I ka kɛnɛ wa?\n\n', 'a\u0300 b\u0301.\tc 😀 d!', longText(300), 'x']) {
      expect(total(input)).toBe(codePoints(input));
    }
    expect(chunkText('  Aw ni ce.  Awɔ.  ').map((c) => c.characters)).toEqual([13, 6]);
  });

  it('yields no chunk for empty or whitespace-only text', () => {
    expect(chunkText('')).toEqual([]);
    expect(chunkText(' \n\t ')).toEqual([]);
  });
});
