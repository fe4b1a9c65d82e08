/**
 * How work is measured for billing (documented in the README): audio is billed per second, rounded UP to
 * the millisecond (so 2.0004 s bills 2.001 s and nothing is ever free); text per character, counted in
 * Unicode code points (ɛ is one character, as a reader counts it).
 */

export function billableSeconds(durationSeconds: number): number {
  return Math.ceil(Math.max(0, durationSeconds) * 1000 - 1e-6) / 1000;
}

export function billableCharacters(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
