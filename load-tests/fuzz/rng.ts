/**
 * The fuzz's randomness: every case is generated from its own seed, derived from the run's seed, the
 * target's name and the case's index, so case N of a target is the same bytes whatever ran before it —
 * which is what makes a run resumable mid-way and any finding replayable on its own (`--replay`).
 * mulberry32 (a 32-bit generator, plenty for choosing mutations) seeded through a string hash.
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [min, max]. */
  int(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  bytes(n: number): Uint8Array;
}

/** FNV-1a over the text, for turning (seed, target, index) into a generator seed. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export function caseRng(seed: number, target: string, index: number): Rng {
  let state = hash(`${seed}:${target}:${index}`);
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
    bytes: (n) => Uint8Array.from({ length: n }, () => Math.floor(next() * 256)),
  };
}

/** Interesting integers for length, count and size fields. */
export const EDGE_INTS = [
  0,
  1,
  -1,
  2,
  7,
  8,
  16,
  255,
  256,
  1024,
  65535,
  65536,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 53,
  -(2 ** 31),
  1e9,
  1e21,
  0.5,
  -0.0001,
  1e-308,
] as const;
