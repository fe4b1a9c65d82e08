/**
 * The CTC runner's walk over long audio (ctc-windows.ts), with made-up word timelines instead of a model:
 * where a window is cut, which words it keeps, what VAD silence is skipped, and — as a property over random
 * timelines, window sizes, VAD regions and cut choices — that the words come out exactly once each, whole,
 * however the windows fall.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Region, Word } from '../../../../src/engines/asr/ctc-decode.js';
import { commitAtPause, skipSilence, SPEECH_MARGIN_SECONDS, walkWindows, windowOptions } from '../../../../src/engines/asr/ctc-windows.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 200);
const w = (text: string, start: number, end: number): Word => ({ text, start, end });
const mid = (from: number, to: number) => (from + to) / 2;

describe('skipSilence', () => {
  const regions = [
    { start: 2, end: 4 },
    { start: 70, end: 75 },
  ];

  it('skips nothing without VAD, or when speech comes within one window', () => {
    expect(skipSilence(0, 80, null, 30)).toBe(0);
    expect(skipSilence(0, 80, regions, 30)).toBe(0);
    expect(skipSilence(41, 80, regions, 30)).toBe(41); // 70 − 1 − 41 = 28 < 30
  });

  it('skips a silence of a whole window or more, up to a margin before the next speech, or to the end', () => {
    expect(skipSilence(10, 80, regions, 30)).toBe(70 - SPEECH_MARGIN_SECONDS);
    expect(skipSilence(76, 200, regions, 30)).toBe(200);
    expect(skipSilence(76, 100, regions, 30)).toBe(76); // what is left is shorter than a window: decoded
  });
});

describe('commitAtPause', () => {
  const options = windowOptions(30); // guard 1 s, search 5 s
  const window = { start: 0, end: 30 };

  it('cuts in the widest pause between words in the last 5 s before the guard, and keeps the words before it', () => {
    const words = [w('a', 20, 23.5), w('b', 23.7, 26), w('c', 26.6, 28.4), w('d', 28.5, 29.9)];
    const calls: Array<[number, number]> = [];
    const commit = commitAtPause(words, window, options, (from, to) => (calls.push([from, to]), mid(from, to)));
    expect(calls).toEqual([[26, 26.6]]);
    expect(commit).toEqual({ committed: words.slice(0, 2), next: 26.3, carried: 2 });
  });

  it('looks back to the middle of the window when the last 5 s hold one long word', () => {
    const words = [w('a', 15.2, 16), w('b', 16.6, 29.5)];
    expect(commitAtPause(words, window, options, mid)).toEqual({ committed: [words[0]], next: 16.3, carried: 1 });
  });

  it('cuts in trailing silence when the words end early, keeping them all', () => {
    const words = [w('a', 1, 2), w('b', 2.5, 3)];
    const commit = commitAtPause(words, window, options, mid);
    expect(commit.committed).toEqual(words);
    expect(commit.next).toBe(26.5);
  });

  it('cuts between words that overlap by a frame, at the point between them', () => {
    const words = [w('a', 20, 26.01), w('b', 25.99, 29.9)];
    expect(commitAtPause(words, window, options, mid)).toEqual({ committed: [words[0]], next: 26, carried: 1 });
  });

  it('with one word over the whole second half, cuts at its end even inside the guard, or at the window end', () => {
    expect(commitAtPause([w('a', 10, 29.5)], window, options, mid)).toEqual({ committed: [w('a', 10, 29.5)], next: 29.75, carried: 0 });
    expect(commitAtPause([w('a', 10, 30)], window, options, mid)).toEqual({ committed: [w('a', 10, 30)], next: 30, carried: 0 });
  });

  it('keeps the cut inside the chosen pause whatever pickCut answers', () => {
    const words = [w('a', 20, 26), w('b', 26.6, 29.9)];
    expect(commitAtPause(words, window, options, () => 1e9).next).toBe(26.6);
    expect(commitAtPause(words, window, options, () => NaN).next).toBe(26);
  });
});

/**
 * A timeline of words separated by pauses, with long silences now and then; the fake model hears a
 * word whole when the window holds it, and only the letters the window covers when it is cut (a word cut
 * in half is heard as a fragment on each side, as a real model would).
 */
const timeline = fc
  .record({
    maxSeconds: fc.integer({ min: 4, max: 30 }),
    words: fc.array(
      fc.record({
        letters: fc.integer({ min: 1, max: 8 }),
        duration: fc.double({ min: 0.1, max: 1.5, noNaN: true }),
        pause: fc.double({ min: 0.02, max: 0.8, noNaN: true }),
        silence: fc.constantFrom(0, 0, 0, 0, 0, 0, 0, 0, 2, 40, 95),
      }),
      { minLength: 1, maxLength: 150 },
    ),
    vadHoles: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 20 }),
    cutAt: fc.double({ min: 0, max: 1, noNaN: true }),
    vad: fc.boolean(),
  })
  .map(({ maxSeconds, words, vadHoles, cutAt, vad }) => {
    let at = 0.3;
    const spoken = words.map((spec, i) => {
      at += spec.silence;
      const word = { text: `${'abcdefgh'.slice(0, spec.letters)}${i}`, start: at, end: at + spec.duration };
      at = word.end + spec.pause;
      return word;
    });
    const total = at + 0.5;
    // VAD: each word's span (padded), merged across short pauses, with holes punched inside speech, as
    // Silero reports low-probability stretches in the middle of words.
    let regions: Region[] = [];
    for (const word of spoken) {
      const last = regions.at(-1);
      if (last && word.start - 0.03 - last.end < 0.3) last.end = word.end + 0.03;
      else regions.push({ start: Math.max(0, word.start - 0.03), end: word.end + 0.03 });
    }
    for (const hole of vadHoles) {
      const word = spoken[Math.min(spoken.length - 1, Math.floor(hole * spoken.length))]!;
      const centre = (word.start + word.end) / 2;
      regions = regions.flatMap((r) => (r.start < centre - 0.02 && centre + 0.02 < r.end ? [{ start: r.start, end: centre - 0.02 }, { start: centre + 0.02, end: r.end }] : [r]));
    }
    return { maxSeconds, spoken, total, regions: vad ? regions : null, cutAt };
  });

function hear(spoken: Word[], start: number, end: number): Word[] {
  return spoken.flatMap((word) => {
    if (word.end <= start || word.start >= end) return [];
    if (word.start >= start && word.end <= end) return [word];
    const from = Math.max(word.start, start);
    const to = Math.min(word.end, end);
    const share = (to - from) / (word.end - word.start);
    const letters = Math.max(1, Math.round(share * word.text.length));
    return [{ text: word.start < start ? word.text.slice(-letters) : word.text.slice(0, letters), start: from, end: to }];
  });
}

describe('walkWindows', () => {
  it('returns every word exactly once and whole, for any timeline, window size, VAD regions and cut choice', async () => {
    await fc.assert(
      fc.asyncProperty(timeline, async ({ maxSeconds, spoken, total, regions, cutAt }) => {
        const windows: Array<[number, number]> = [];
        const out: Word[] = [];
        const walk = walkWindows({
          total,
          regions,
          options: windowOptions(maxSeconds),
          decode: async (start, end) => (windows.push([start, end]), hear(spoken, start, end)),
          pickCut: (from, to) => from + cutAt * (to - from),
          checkpoint: async () => {},
        });
        for await (const words of walk) out.push(...words);
        expect(out).toEqual(spoken);
        for (const [start, end] of windows) expect(end - start).toBeLessThanOrEqual(maxSeconds + 1e-9);
      }),
      { numRuns: RUNS, seed: 20260907 },
    );
  });

  it('checks for cancellation before every window', async () => {
    let checkpoints = 0;
    const spoken = Array.from({ length: 40 }, (_, i) => w(`w${i}`, i, i + 0.5));
    const walk = walkWindows({ total: 41, regions: null, options: windowOptions(8), decode: async (s, e) => hear(spoken, s, e), pickCut: mid, checkpoint: async () => void checkpoints++ });
    const windows: Word[][] = [];
    for await (const words of walk) windows.push(words);
    expect(windows.flat()).toEqual(spoken);
    expect(checkpoints).toBe(windows.length);
  });
});
