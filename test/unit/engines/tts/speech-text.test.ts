/**
 * What a voice says for a text (speech-text.ts), against the demo voice's alphabet: the cases of issue P6 #8
 * (digits, emoji, lone surrogates), punctuation as pauses, marks and format characters dropped, what is
 * unspeakable and how it is named; and over random strings, that the spoken form holds only the alphabet
 * and single spaces, names only characters of the input, and is its own spoken form.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeChar, speechText } from '../../../../src/engines/tts/speech-text.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 300);
const LETTERS = [...'abcdeɛfghijklmnɲŋoɔprstuwyz'];
const ALPHABET = new Set([...LETTERS, ...LETTERS.map((c) => c.toUpperCase())]);
const say = (text: string) => speechText(text, ALPHABET);

describe('speechText', () => {
  it('reads digits as Bambara number words (the issue’s "123")', () => {
    expect(say('123')).toEqual({ text: 'kɛmɛ ni mugan ni saba', unspeakable: [] });
    expect(say('A sɔngɔ ye 2500 ye.')).toEqual({ text: 'A sɔngɔ ye waa fila ni kɛmɛ duuru ye', unspeakable: [] });
    expect(say('a1b')).toEqual({ text: 'a kelen b', unspeakable: [] });
    expect(say('3.5')).toEqual({ text: 'saba duuru', unspeakable: [] });
  });

  it('names emoji, lone surrogates, control characters, symbols and letters the voice lacks', () => {
    expect(say('i ni ce 😀')).toEqual({ text: 'i ni ce', unspeakable: ['😀'] });
    expect(say('a\ud800b\udfffc')).toEqual({ text: 'abc', unspeakable: ['\ud800', '\udfff'] });
    expect(say('a\u0000b\u0007\u001b')).toEqual({ text: 'ab', unspeakable: ['\u0000', '\u0007', '\u001b'] });
    expect(say('50 € + 2 © 3°').unspeakable).toEqual(['€', '©', '°']);
    expect(say('xylo дом').unspeakable).toEqual(['д', 'о', 'м']);
    expect(say('١٢').unspeakable).toEqual(['١', '٢']);
    expect(say('😀😀 ñ 😀').unspeakable).toEqual(['😀']);
  });

  it('reads punctuation and whitespace as word boundaries, and joins the letters around an elision apostrophe', () => {
    expect(say('a,b.c!d?e;f:g-h…i')).toEqual({ text: 'a b c d e f g h i', unspeakable: [] });
    expect(say('« I ni ce » (a) "b" 50%')).toEqual({ text: 'I ni ce a b bi duuru', unspeakable: [] });
    expect(say("n'a fɔ, k’a di")).toEqual({ text: 'na fɔ ka di', unspeakable: [] });
    expect(say(' \t a \n\r b  ')).toEqual({ text: 'a b', unspeakable: [] });
  });

  it('spells q, v and x as Bambara writes their sounds (k, f, ks), keeping case', () => {
    expect(say('Streaming test text')).toEqual({ text: 'Streaming test tekst', unspeakable: [] });
    expect(say('Hello, how are you?')).toEqual({ text: 'Hello how are you', unspeakable: [] });
    expect(say('Quartz Vevey XXL taxi')).toEqual({ text: 'Kuartz Fefey KSKSL taksi', unspeakable: [] });
    expect(say('ẋ v̂')).toEqual({ text: 'ks f', unspeakable: [] }); // marks on them are dropped as on other letters
    // A voice that has the letters says them as they are; one without k cannot respell q.
    expect(speechText('qvx', new Set([...ALPHABET, 'q', 'v', 'x']))).toEqual({ text: 'qvx', unspeakable: [] });
    expect(speechText('qa', new Set([...ALPHABET].filter((c) => c !== 'k')))).toEqual({ text: 'a', unspeakable: ['q'] });
  });

  it('reads the ASCII symbols $ + < = > ^ | ~ as pauses, like punctuation', () => {
    expect(say('a+b=c $5 <x> 2^3 |d| ~e')).toEqual({ text: 'a b c duuru ks fila saba d e', unspeakable: [] });
  });

  it('every printable ASCII text is speakable, and has something to say exactly when it has a letter or digit', () => {
    const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((u) => String.fromCharCode(u)), maxLength: 80 });
    fc.assert(
      fc.property(printable, (input) => {
        const { text, unspeakable } = say(input);
        expect(unspeakable).toEqual([]);
        expect(text.length > 0).toBe(/[A-Za-z0-9]/.test(input));
      }),
      { numRuns: RUNS, seed: 83 },
    );
  });

  it('drops accents and tone marks the voice lacks, and invisible format characters', () => {
    expect(say('Café à Bamako')).toEqual({ text: 'Cafe a Bamako', unspeakable: [] });
    expect(say('ɛ̀ɔ́ sà')).toEqual({ text: 'ɛɔ sa', unspeakable: [] });
    expect(say('a\u200bb\u00adc\ufeff')).toEqual({ text: 'abc', unspeakable: [] });
    expect(say('kεnε')).toEqual({ text: 'kɛnɛ', unspeakable: [] }); // Greek epsilon typed for ɛ
  });

  it('cannot read digits with a voice that lacks the letters of the number words', () => {
    const noOpenE = new Set([...ALPHABET].filter((c) => c !== 'ɛ'));
    expect(speechText('100 sa', noOpenE)).toEqual({ text: 'sa', unspeakable: ['1', '0'] });
    expect(speechText('12 sa', noOpenE)).toEqual({ text: 'tan ni fila sa', unspeakable: [] });
  });

  it('has nothing to say for punctuation alone', () => {
    expect(say('... !! ?')).toEqual({ text: '', unspeakable: [] });
  });

  it('spoken form: alphabet and single spaces only; names only input characters, once; is its own spoken form', () => {
    const anyChar = fc.oneof(
      fc.constantFrom(...LETTERS, 'A', 'Ɛ', ' ', '\n', ',', '.', "'", '-', '0', '7', 'é', '\u0300', '😀', '\u200b', '€', 'x', 'Q', '+', 'д'),
      fc.integer({ min: 0xd800, max: 0xdfff }).map((u) => String.fromCharCode(u)),
      fc.integer({ min: 0, max: 0x1f }).map((u) => String.fromCharCode(u)),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    );
    fc.assert(
      fc.property(
        fc.array(anyChar, { maxLength: 60 }).map((a) => a.join('')),
        (input) => {
          const { text, unspeakable } = say(input);
          expect([...text].every((c) => c === ' ' || ALPHABET.has(c))).toBe(true);
          expect(text).toBe(text.trim().replace(/ {2,}/g, ' '));
          expect(new Set(unspeakable).size).toBe(unspeakable.length);
          for (const c of unspeakable) expect(input.normalize('NFC').includes(c)).toBe(true);
          expect(say(text)).toEqual({ text, unspeakable: [] });
        },
      ),
      { numRuns: RUNS, seed: 81 },
    );
  });

  it('text of letters, spaces and punctuation: spoken as its words, whatever separates them', () => {
    const separator = fc.constantFrom(' ', '  ', '\n', ', ', '. ', '? ', '! ', ' - ', ';', ':', '…', ' « ', ' » ', '(', ')', '"');
    const word = fc.array(fc.constantFrom(...ALPHABET), { minLength: 1, maxLength: 8 }).map((a) => a.join(''));
    fc.assert(
      fc.property(fc.array(fc.tuple(separator, word)), separator, (pairs, last) => {
        const input = pairs.map(([s, w]) => s + w).join('') + last;
        expect(say(input)).toEqual({ text: pairs.map(([, w]) => w).join(' '), unspeakable: [] });
      }),
      { numRuns: RUNS, seed: 82 },
    );
  });
});

describe('describeChar', () => {
  it('names a character by code point, with the character itself when it is visible', () => {
    expect(describeChar('😀')).toBe('U+1F600 "😀"');
    expect(describeChar('x')).toBe('U+0078 "x"');
    expect(describeChar('\ud800')).toBe('U+D800');
    expect(describeChar('\u0007')).toBe('U+0007');
    expect(describeChar('\u00a0')).toBe('U+00A0');
  });
});
