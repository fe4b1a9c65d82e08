/**
 * How the CTC runner walks audio longer than the model's window: decode a window of at most `maxSeconds`,
 * keep the words that end before a pause the model itself heard between two words, and start the next
 * window at that pause. Pure functions over decoded words, so every edge case is unit-tested without a model.
 *
 * Why not cut first and decode after (as VAD-gap planning does): neither VAD nor signal energy knows where
 * words end. VAD reports "silence" inside words (stop closures, soft vowels) and none between words spoken
 * without a pause, and the quietest 20 ms of a stretch may lie between two letters of one word; a cut there
 * splits the word in two ("kɔ nɔ"), and a sound cut in half can be heard on both sides ("i n ni"). The
 * decoded words of the window say where the word boundaries are, for any CTC model: a delimiter token
 * (`|`, `▁`, a space) or a pause long enough to end a word. Cutting inside such a boundary, with
 * `guardSeconds` of audio after it so the last kept word was decoded with right context, neither drops nor
 * doubles a boundary; the words after the cut are decoded again, from the cut, in the next window.
 */
import type { Region, Word } from './ctc-decode.js';

export interface WindowOptions {
  /** Longest window the model runs on. */
  maxSeconds: number;
  /** Audio a cut leaves after itself inside the window: the right context of the last kept word. */
  guardSeconds: number;
  /** The widest pause is looked for this far before the guard first (less audio decoded twice). */
  searchSeconds: number;
}

/** Guard 1 s and search 5 s for 30 s windows, scaled down for short windows (tests use 2–4 s). */
export function windowOptions(maxSeconds: number): WindowOptions {
  return { maxSeconds, guardSeconds: Math.min(1, maxSeconds / 8), searchSeconds: Math.min(5, maxSeconds / 4) };
}

/** VAD silence closer than this to detected speech is still decoded: VAD onsets can come late. */
export const SPEECH_MARGIN_SECONDS = 1;

/**
 * Where the next decoded window should start, at or after `start`: skips audio that VAD marks as silence
 * (more than SPEECH_MARGIN_SECONDS before the next speech region, or after the last one). `regions` null
 * means no VAD ran: nothing is skipped.
 */
export function skipSilence(start: number, total: number, regions: readonly Region[] | null): number {
  if (!regions) return start;
  const next = regions.find((r) => r.end > start);
  if (!next) return total;
  return Math.max(start, Math.min(total, next.start - SPEECH_MARGIN_SECONDS));
}

export interface Commit {
  /** Words before the cut: final. */
  committed: Word[];
  /** Where the next window starts (the cut). */
  next: number;
  /** Words after the cut, dropped here because the next window decodes them again. */
  carried: number;
}

interface Pause {
  start: number;
  end: number;
  /** Index of the first word after the pause (words.length for the pause that ends the window). */
  before: number;
}

/** The pauses around and between the words: where a cut splits no word. */
function pausesOf(words: readonly Word[], window: Region): Pause[] {
  const pauses: Pause[] = [];
  let previousEnd = window.start;
  words.forEach((word, i) => {
    // A frame's span can make neighbours overlap by a few ms: the boundary is then the point between them.
    const middle = (previousEnd + word.start) / 2;
    pauses.push(word.start >= previousEnd ? { start: previousEnd, end: word.start, before: i } : { start: middle, end: middle, before: i });
    previousEnd = word.end;
  });
  const last = Math.min(previousEnd, window.end);
  pauses.push({ start: last, end: window.end, before: words.length });
  return pauses;
}

/** The widest part of a pause inside [from, to]; the later one wins a tie. */
function widest(pauses: Pause[], from: number, to: number): (Pause & { from: number; to: number }) | null {
  let best: (Pause & { from: number; to: number }) | null = null;
  for (const pause of pauses) {
    const a = Math.max(pause.start, from);
    const b = Math.min(pause.end, to);
    if (b < a) continue;
    if (!best || b - a >= best.to - best.from) best = { ...pause, from: a, to: b };
  }
  return best;
}

/**
 * Chooses the cut of a window that is not the last: inside the widest pause between words in the last
 * `searchSeconds` before the guard, else anywhere in the second half of the window before the guard, else
 * (one word runs through all of that: a "word" over maxSeconds/2 long, which real speech does not have)
 * at the first pause after it, or the window's end. `pickCut(from, to)` places the cut inside the chosen
 * stretch (the runner picks its quietest 20 ms); the result is clamped to the stretch.
 */
export function commitAtPause(words: readonly Word[], window: Region, options: WindowOptions, pickCut: (from: number, to: number) => number): Commit {
  const pauses = pausesOf(words, window);
  const lo = window.start + (window.end - window.start) / 2;
  const hi = Math.max(lo, window.end - options.guardSeconds);
  const chosen = widest(pauses, Math.max(lo, hi - options.searchSeconds), hi) ?? widest(pauses, lo, hi) ?? widest(pauses, lo, window.end)!;
  const picked = chosen.to > chosen.from ? pickCut(chosen.from, chosen.to) : chosen.from;
  const cut = Math.min(chosen.to, Math.max(chosen.from, Number.isFinite(picked) ? picked : chosen.from));
  return { committed: words.slice(0, chosen.before), next: cut, carried: words.length - chosen.before };
}
