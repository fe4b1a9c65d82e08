/**
 * How the CTC runner walks audio longer than the model's window: decode a window of at most `maxSeconds`,
 * keep the words that end before a pause the model itself heard between two words, and start the next
 * window at that pause. Free of onnxruntime (the model is a `decode` callback), so the walk is tested with
 * made-up word timelines.
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

/** A skip stops this far before the next speech region: VAD onsets can come late. */
export const SPEECH_MARGIN_SECONDS = 1;

/**
 * Where the next decoded window should start, at or after `start`: a stretch VAD marks as silence is
 * skipped only when it is at least a whole window long (as the earlier planner dropped only chunks with
 * no speech region at all), since VAD can miss quiet speech and its onsets can come late; shorter silences
 * are decoded with the speech around them. `regions` null means no VAD ran: nothing is skipped.
 */
export function skipSilence(start: number, total: number, regions: readonly Region[] | null, maxSeconds: number): number {
  if (!regions) return start;
  const next = regions.find((r) => r.end > start);
  const speech = next ? next.start - SPEECH_MARGIN_SECONDS : total;
  return speech - start < maxSeconds ? start : Math.min(total, speech);
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

export interface WindowWalk {
  /** Audio length in seconds. */
  total: number;
  /** Speech regions from VAD, or null when none ran (nothing is skipped). */
  regions: readonly Region[] | null;
  options: WindowOptions;
  /** Runs the model on [start, end] (seconds) and returns its words with absolute times. */
  decode(start: number, end: number): Promise<Word[]>;
  /** Where to cut inside [from, to] (the runner: the quietest 20 ms). */
  pickCut(from: number, to: number): number;
  /** Awaited before each window (cancellation). */
  checkpoint(): Promise<void>;
}

/** Decodes the whole audio window by window; yields each window's final words, in time order. */
export async function* walkWindows(walk: WindowWalk): AsyncGenerator<Word[]> {
  const { total, options } = walk;
  let start = 0;
  let carried = 0;
  while (start < total) {
    await walk.checkpoint();
    // Words the last window dropped after its cut are decoded again, never skipped as silence.
    if (!carried) start = skipSilence(start, total, walk.regions, options.maxSeconds);
    if (start >= total) return;
    const end = Math.min(total, start + options.maxSeconds);
    const words = await walk.decode(start, end);
    if (end >= total) {
      yield words;
      return;
    }
    const commit = commitAtPause(words, { start, end }, options, walk.pickCut);
    yield commit.committed;
    ({ carried } = commit);
    start = commit.next;
  }
}
