/**
 * Bambara number words: the conventional forms (issue P6 #8 and the standard orthography), the digit-by-digit
 * reading of codes, and — over random numbers — that the words use only letters every demo voice speaks and
 * that numbers below a thousand read back to themselves through an independent parser of the grammar.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bambaraNumber, MAX_SPOKEN_NUMBER, readDigits } from '../../../../src/engines/tts/bambara-numbers.js';
import { DEMO_SYMBOLS } from '../../../../models/generator/demo-voice.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 300);

describe('bambaraNumber', () => {
  it.each([
    [0, 'fu'],
    [1, 'kelen'],
    [2, 'fila'],
    [3, 'saba'],
    [4, 'naani'],
    [5, 'duuru'],
    [6, 'wɔɔrɔ'],
    [7, 'wolonwula'],
    [8, 'seegin'],
    [9, 'kɔnɔntɔn'],
    [10, 'tan'],
    [11, 'tan ni kelen'],
    [19, 'tan ni kɔnɔntɔn'],
    [20, 'mugan'],
    [21, 'mugan ni kelen'],
    [30, 'bi saba'],
    [47, 'bi naani ni wolonwula'],
    [90, 'bi kɔnɔntɔn'],
    [100, 'kɛmɛ'],
    [101, 'kɛmɛ ni kelen'],
    [123, 'kɛmɛ ni mugan ni saba'],
    [200, 'kɛmɛ fila'],
    [999, 'kɛmɛ kɔnɔntɔn ni bi kɔnɔntɔn ni kɔnɔntɔn'],
    [1000, 'waa kelen'],
    [1001, 'waa kelen ni kelen'],
    [2500, 'waa fila ni kɛmɛ duuru'],
    [10_000, 'waa tan'],
    [100_000, 'waa kɛmɛ'],
    [1_000_000, 'miliyɔn kelen'],
    [2_000_300, 'miliyɔn fila ni kɛmɛ saba'],
    [1_000_000_000, 'miliyari kelen'],
    [
      MAX_SPOKEN_NUMBER,
      'miliyari kɛmɛ kɔnɔntɔn ni bi kɔnɔntɔn ni kɔnɔntɔn ni miliyɔn kɛmɛ kɔnɔntɔn ni bi kɔnɔntɔn ni kɔnɔntɔn ni waa kɛmɛ kɔnɔntɔn ni bi kɔnɔntɔn ni kɔnɔntɔn ni kɛmɛ kɔnɔntɔn ni bi kɔnɔntɔn ni kɔnɔntɔn',
    ],
  ])('%i is %s', (n, words) => {
    expect(bambaraNumber(n)).toBe(words);
  });

  it('refuses what it has no words for', () => {
    for (const n of [-1, 1.5, MAX_SPOKEN_NUMBER + 1, NaN]) expect(() => bambaraNumber(n)).toThrow(RangeError);
  });

  it('uses only letters of the demo alphabet, single spaces between words', () => {
    const letters = new Set(DEMO_SYMBOLS);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_SPOKEN_NUMBER }), (n) => {
        const words = bambaraNumber(n);
        expect([...words].every((c) => letters.has(c))).toBe(true);
        expect(words).toBe(words.trim().replace(/ +/g, ' '));
      }),
      { numRuns: RUNS, seed: 8 },
    );
  });

  it('reads back below a thousand through a parser of the grammar', () => {
    const units = ['fu', 'kelen', 'fila', 'saba', 'naani', 'duuru', 'wɔɔrɔ', 'wolonwula', 'seegin', 'kɔnɔntɔn'];
    const parse = (words: string): number => {
      let value = 0;
      for (const part of words.split(' ni ')) {
        const [head, tail] = part.split(' ');
        if (head === 'kɛmɛ') value += 100 * (tail ? units.indexOf(tail) : 1);
        else if (head === 'bi') value += 10 * units.indexOf(tail!);
        else if (head === 'tan') value += 10;
        else if (head === 'mugan') value += 20;
        else value += units.indexOf(head!);
      }
      return value;
    };
    for (let n = 0; n < 1000; n++) expect(parse(bambaraNumber(n))).toBe(n);
  });
});

describe('readDigits', () => {
  it('reads a number as a number, a code with a leading zero or over 12 digits digit by digit', () => {
    expect(readDigits('123')).toBe('kɛmɛ ni mugan ni saba');
    expect(readDigits('0')).toBe('fu');
    expect(readDigits('0612')).toBe('fu wɔɔrɔ kelen fila');
    expect(readDigits('1234567890123')).toBe('kelen fila saba naani duuru wɔɔrɔ wolonwula seegin kɔnɔntɔn fu kelen fila saba');
    expect(() => readDigits('12a')).toThrow(RangeError);
  });

  it('says one word per digit when it reads digit by digit', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^0[0-9]{1,30}$/), (digits) => {
        expect(readDigits(digits).split(' ')).toHaveLength(digits.length);
      }),
      { numRuns: RUNS, seed: 9 },
    );
  });
});
