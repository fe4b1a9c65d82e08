/**
 * Numbers written in digits, read as Bambara number words, so a voice can say amounts, times and codes in
 * IVR prompts. Forms of the standard orthography, without tone marks (as the voices' vocabularies are):
 *
 *   0 fu · 1 kelen · 2 fila · 3 saba · 4 naani · 5 duuru · 6 wɔɔrɔ · 7 wolonwula · 8 seegin · 9 kɔnɔntɔn
 *   10 tan · 11 tan ni kelen · 20 mugan · 21 mugan ni kelen · 30 bi saba … 90 bi kɔnɔntɔn
 *   100 kɛmɛ · 200 kɛmɛ fila · 125 kɛmɛ ni mugan ni duuru · 1000 waa kelen · 2500 waa fila ni kɛmɛ duuru
 *   1 000 000 miliyɔn kelen · 1 000 000 000 miliyari kelen
 *
 * The multiplier follows the unit word (kɛmɛ fila, waa fila), parts are joined by `ni` ("and"), and 100 is
 * kɛmɛ alone while 1000 is waa kelen, as speakers say them. Range: 0 to 999 999 999 999 read as one number.
 * A digit string with a leading zero (phone numbers, codes: 0612) or of more than 12 digits is read digit by
 * digit. Separators are not numbers: "3.5" and "1 000" are read as two numbers, with a pause between.
 */

const UNITS = ['fu', 'kelen', 'fila', 'saba', 'naani', 'duuru', 'wɔɔrɔ', 'wolonwula', 'seegin', 'kɔnɔntɔn'] as const;

/** The largest number read as one number. */
export const MAX_SPOKEN_NUMBER = 999_999_999_999;
const SCALES: ReadonlyArray<readonly [number, string]> = [
  [1_000_000_000, 'miliyari'],
  [1_000_000, 'miliyɔn'],
  [1_000, 'waa'],
];

function tens(n: number): string {
  const unit = n % 10;
  const ten = Math.floor(n / 10);
  const word = ten === 1 ? 'tan' : ten === 2 ? 'mugan' : `bi ${UNITS[ten]}`;
  return unit ? `${word} ni ${UNITS[unit]}` : word;
}

/** 1–999. */
function belowThousand(n: number): string {
  if (n < 10) return UNITS[n]!;
  if (n < 100) return tens(n);
  const hundreds = Math.floor(n / 100);
  const rest = n % 100;
  const word = hundreds === 1 ? 'kɛmɛ' : `kɛmɛ ${UNITS[hundreds]}`;
  return rest ? `${word} ni ${belowThousand(rest)}` : word;
}

/** An integer 0…MAX_SPOKEN_NUMBER in words. */
export function bambaraNumber(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_SPOKEN_NUMBER) throw new RangeError(`No Bambara number words for ${n} (0 to ${MAX_SPOKEN_NUMBER})`);
  if (n === 0) return UNITS[0];
  const parts: string[] = [];
  let rest = n;
  for (const [size, name] of SCALES) {
    const count = Math.floor(rest / size);
    if (!count) continue;
    parts.push(`${name} ${belowThousand(count)}`);
    rest %= size;
  }
  if (rest) parts.push(belowThousand(rest));
  return parts.join(' ni ');
}

/** A run of ASCII digits in words: as one number, or digit by digit (leading zero, or over 12 digits). */
export function readDigits(digits: string): string {
  if (!/^[0-9]+$/.test(digits)) throw new RangeError(`Not a run of digits: ${JSON.stringify(digits)}`);
  if ((digits.length > 1 && digits.startsWith('0')) || digits.length > String(MAX_SPOKEN_NUMBER).length) {
    return [...digits].map((d) => UNITS[Number(d)]).join(' ');
  }
  return bambaraNumber(Number(digits));
}
