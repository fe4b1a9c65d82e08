/**
 * What a voice will say for a text, given the voice's alphabet (the characters its vocabulary speaks,
 * reported by the VITS runner in `info().alphabet`), and which characters it cannot say at all. The API
 * calls this before any synthesis or charge (unspeakable characters → 400), and the runner speaks exactly
 * the `text` it returns, so the two cannot disagree. Rules, in order, per character of the NFC text:
 *
 *   - in the alphabet (either case, as the vocabulary has it): spoken;
 *   - ASCII digits: a run is read as Bambara number words (bambara-numbers.ts), spaced from its neighbours;
 *   - the Latin letters Bambara's alphabet does not have (q v x), when the voice lacks them: the letters
 *     Bambara spells their sound with (q → k, v → f, x → ks), as loanwords are written (taksi, fotó), so
 *     names and French or English words are read rather than refused;
 *   - whitespace and punctuation: a word boundary (a pause), except apostrophes of elision (n'a, k’a),
 *     which are dropped so the letters around them join, as they are read; the ASCII symbols $ + < = > ^ | ~
 *     are pauses too, since they turn up in ordinary typed and generated text (markdown, "~5", "a=b") and
 *     have no reading a voice shares;
 *   - a letter with accents or tone marks the voice lacks (é, à, ɛ̀): its base letter, the marks dropped;
 *     a lone combining mark the voice lacks is dropped; invisible format characters (ZWSP, soft hyphen,
 *     BOM) are dropped;
 *   - anything else is unspeakable: emoji and the symbols beyond ASCII (€ © ° …), letters the voice lacks
 *     (other scripts), other digits (١٢٣), control characters, lone surrogates, private-use and unassigned
 *     code points. Printable ASCII is therefore always speakable by a voice with the Bambara alphabet.
 *
 * The spoken text has single spaces between words and none at the ends; case is kept (the voices lower it).
 */
import { readDigits } from './bambara-numbers.js';
import { normalizeText } from './text-chunker.js';

export interface SpeechText {
  /** What the voice says: alphabet characters separated by single spaces ('' when nothing can be said). */
  text: string;
  /** Distinct characters that no rule can speak, in order of first appearance (empty when all can be). */
  unspeakable: string[];
}

const ELISION = new Set(["'", '\u2019', '\u02bc', '`', '\u00b4']);
const DIGITS = /[0-9]+/y;
/** How Bambara spells the sounds of the Latin letters its alphabet lacks (capitals keep their case). */
const SPELLED_AS: Record<string, string> = { q: 'k', v: 'f', x: 'ks', Q: 'K', V: 'F', X: 'KS' };
/** The printable ASCII characters that are neither letters, digits nor punctuation to Unicode. */
const ASCII_SYMBOLS = new Set([...'$+<=>^|~']);

/** A letter the voice lacks, spelled with letters it has (q → k …), or null when there is no such spelling. */
function respell(c: string, alphabet: ReadonlySet<string>): string | null {
  const spelled = SPELLED_AS[c];
  return spelled !== undefined && [...spelled].every((l) => alphabet.has(l)) ? spelled : null;
}

/** How one character (not a digit) is said: its spoken form, or null when it cannot be said. */
function speakChar(c: string, alphabet: ReadonlySet<string>): string | null {
  if (alphabet.has(c)) return c;
  const spelled = respell(c, alphabet);
  if (spelled !== null) return spelled;
  if (/\s/u.test(c)) return ' ';
  if (ELISION.has(c)) return '';
  if (/\p{P}/u.test(c) || ASCII_SYMBOLS.has(c)) return ' ';
  if (/\p{Cf}/u.test(c)) return '';
  if (/\p{M}/u.test(c)) return '';
  // A precomposed letter the voice lacks: its decomposition, keeping what the voice has (base letter, and
  // any mark it speaks) and dropping the other marks.
  const parts = [...c.normalize('NFD')];
  const base = parts.length > 1 && !/\p{M}/u.test(parts[0]!) ? (alphabet.has(parts[0]!) ? parts[0]! : respell(parts[0]!, alphabet)) : null;
  if (base !== null)
    return (
      base +
      parts
        .slice(1)
        .filter((p) => alphabet.has(p))
        .join('')
    );
  return null;
}

/** The spoken form of `input` for a voice whose alphabet is `alphabet` (see the file header for the rules). */
export function speechText(input: string, alphabet: ReadonlySet<string>): SpeechText {
  const text = normalizeText(input);
  const unspeakable = new Set<string>();
  let out = '';
  for (let i = 0; i < text.length;) {
    DIGITS.lastIndex = i;
    const digits = DIGITS.exec(text)?.[0];
    if (digits) {
      const words = readDigits(digits);
      // A voice without the letters of the number words cannot read digits: the digits are what it lacks.
      if ([...words].every((c) => c === ' ' || alphabet.has(c))) out += ` ${words} `;
      else for (const d of digits) unspeakable.add(d);
      i += digits.length;
      continue;
    }
    // A surrogate pair is one code point (two units); a lone surrogate comes back as itself (one unit).
    const char = String.fromCodePoint(text.codePointAt(i)!);
    const spoken = speakChar(char, alphabet);
    if (spoken === null) unspeakable.add(char);
    else out += spoken;
    i += char.length;
  }
  return { text: out.replace(/\s+/gu, ' ').trim(), unspeakable: [...unspeakable] };
}

/** `U+1F600 "😀"`: how an API message names a character, readable even for controls and lone surrogates. */
export function describeChar(c: string): string {
  const hex = c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
  const printable = !/[\p{C}\p{Z}]/u.test(c) || c === ' ';
  return printable ? `U+${hex} ${JSON.stringify(c)}` : `U+${hex}`;
}
