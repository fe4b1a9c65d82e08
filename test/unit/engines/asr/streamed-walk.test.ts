/**
 * streamedWalk: the CTC window walk over audio that arrives in windows gives exactly what walkWindows
 * gives for the whole audio — same model windows (the samples each decode gets), same cuts, same words —
 * whatever the window sizes, and reads the input only about a model window ahead, silences skipped
 * included. A stand-in decoder turns the signal's 20 ms frames into words (runs of loud frames), so the
 * words, like a model's, depend on where each window starts and ends.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Word } from '../../../../src/engines/asr/ctc-decode.js';
import { walkWindows, windowOptions } from '../../../../src/engines/asr/ctc-windows.js';
import { streamedWalk } from '../../../../src/engines/asr/streamed-walk.js';
import { DEFAULT_VAD_OPTIONS, VAD_WINDOW, regionsFromProbabilities } from '../../../../src/engines/vad/silero-vad.js';
import { RATE, audioOf, fakeVad, fingerprint, probabilitiesOf, quietest, windows, type Run } from './helpers/windowed-audio.js';

const MAX = 3;
const OPTIONS = windowOptions(MAX);

/** Words of a window: runs of 20 ms frames whose signal is loud (the VAD samples left out), in absolute times. */
function decodeFrames(samples: Float32Array, offsetSeconds: number, calls: string[]): Word[] {
  calls.push(`${offsetSeconds}:${fingerprint(samples)}`);
  const offset = Math.round(offsetSeconds * RATE);
  const words: Word[] = [];
  let current: Word | null = null;
  for (let f = 0; (f + 1) * 320 <= samples.length; f++) {
    let sum = 0;
    let n = 0;
    for (let i = f * 320; i < (f + 1) * 320; i++) if ((offset + i) % VAD_WINDOW !== 0) (sum += samples[i]!, n++);
    const t = (offset + f * 320) / RATE;
    if (sum / n > 0.5) {
      if (current) current.end = t + 0.02;
      else current = { text: `w${Math.round(t * 50)}`, start: t, end: t + 0.02 };
    } else if (current) {
      words.push(current);
      current = null;
    }
  }
  if (current) words.push(current);
  return words;
}

interface Walked {
  /** Each decode's offset and samples. */
  calls: string[];
  /** The words each step yielded. */
  steps: Word[][];
}

async function wholeWalk(audio: Float32Array): Promise<Walked> {
  const calls: string[] = [];
  const total = audio.length / RATE;
  const view = { samples: audio, offset: 0 };
  const steps: Word[][] = [];
  const walk = walkWindows({
    total,
    regions: total > MAX ? regionsFromProbabilities(probabilitiesOf(audio), audio.length, DEFAULT_VAD_OPTIONS) : null,
    options: OPTIONS,
    decode: async (start, end) => {
      const first = Math.round(start * RATE);
      return decodeFrames(audio.subarray(first, Math.min(audio.length, Math.round(end * RATE))), first / RATE, calls);
    },
    pickCut: (from, to) => quietest(view, from, to),
    checkpoint: async () => {},
  });
  for await (const words of walk) steps.push(words);
  return { calls, steps };
}

async function streamWalk(audio: Float32Array, sizes: number[], pulled?: { count: number }, onStep?: () => void): Promise<Walked> {
  const calls: string[] = [];
  const steps: Word[][] = [];
  const walk = streamedWalk(windows(audio, sizes, pulled), {
    rate: RATE,
    options: OPTIONS,
    decode: async (samples, offsetSeconds) => decodeFrames(samples, offsetSeconds, calls),
    pickCut: quietest,
    vad: async () => fakeVad,
    checkpoint: async () => {},
  });
  for await (const words of walk) {
    steps.push(words);
    onStep?.();
  }
  return { calls, steps };
}

const length = fc.oneof(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 250 }));
const run: fc.Arbitrary<Run> = fc.oneof(
  fc.record({ p: fc.constantFrom(0, 0.05, 0.3), windows: length }), // silence, below the end threshold
  fc.record({ p: fc.constantFrom(0.6, 0.95), windows: length, word: fc.integer({ min: 2, max: 40 }) }), // speech: words and short pauses
  fc.record({ p: fc.constant(0.4), windows: fc.integer({ min: 1, max: 80 }) }), // between the thresholds, shorter than a window
);

describe('streamedWalk', () => {
  it('walks windowed audio exactly as walkWindows walks the whole (fast-check, fixed seed)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(run, { minLength: 1, maxLength: 16 }),
        fc.integer({ min: 0, max: VAD_WINDOW - 1 }),
        fc.array(fc.oneof(fc.integer({ min: 100, max: 3000 }), fc.integer({ min: 1, max: 80_000 })), { minLength: 1, maxLength: 5 }),
        async (generated, tail, sizes) => {
          const runs: Run[] = [];
          for (const r of generated) {
            const last = runs.at(-1);
            if (last?.p === 0.4 && r.p === 0.4) last.windows = Math.min(80, last.windows + r.windows);
            else runs.push({ ...r });
          }
          const audio = audioOf(runs, tail);
          expect(await streamWalk(audio, sizes)).toEqual(await wholeWalk(audio));
        },
      ),
      { seed: 20261124, numRuns: 500 },
    );
  }, 120_000);

  it('a blip the VAD has not finished reading still counts as speech that may come (found by the property)', async () => {
    const audio = audioOf([{ p: 0, windows: 125 }, { p: 0.6, windows: 1, word: 2 }, { p: 0.4, windows: 2 }, { p: 0, windows: 5 }], 0);
    for (const sizes of [[1], [512], [7919, 133]]) expect(await streamWalk(audio, sizes)).toEqual(await wholeWalk(audio));
  });

  it('probabilities between the thresholds for a long time after speech: walked anyway, within a few windows of audio', async () => {
    // Words, a silent window (the region's end pending), then 60 s at 0.4 without words, then words again.
    const audio = audioOf([{ p: 0.9, windows: 60, word: 6 }, { p: 0, windows: 1 }, { p: 0.4, windows: 1900 }, { p: 0.9, windows: 60, word: 6 }, { p: 0, windows: 40 }], 0);
    const pulled = { count: 0 };
    const atStep: number[] = [];
    const streamed = await streamWalk(audio, [8000], pulled, () => atStep.push(pulled.count));
    expect(streamed.steps.flat().length).toBeGreaterThan(10); // both stretches of words were decoded
    // Every step came within a few windows of input after the previous one: nothing waited for the gray stretch to end.
    atStep.forEach((count, i) => expect(count - (i ? atStep[i - 1]! : 0)).toBeLessThanOrEqual(Math.ceil((2 * MAX + 1) / 0.5) + 1));
  });

  it('skips a long silence without holding it, and reads about a window ahead', async () => {
    // 2 s of words, 60 s of silence, 2 s of words, in 0.5 s input windows.
    const audio = audioOf([{ p: 0.9, windows: 62, word: 8 }, { p: 0, windows: 1875 }, { p: 0.9, windows: 62, word: 8 }, { p: 0, windows: 40 }], 0);
    const pulled = { count: 0 };
    const atStep: number[] = [];
    const streamed = await streamWalk(audio, [8000], pulled, () => atStep.push(pulled.count));
    expect(streamed).toEqual(await wholeWalk(audio));
    // The first window's words come out after about one window (3 s) and the VAD's settling, not after the silence.
    expect(atStep[0]).toBeLessThanOrEqual(Math.ceil((MAX + 1.5) / 0.5));
  });
});
