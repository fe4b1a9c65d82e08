/**
 * The CTC runner's window walk (ctc-windows.ts: decode a window, cut it inside a pause between decoded
 * words, start the next window at the cut, skip stretches VAD marks as silence) over audio that arrives in
 * windows, holding about one model window of it: the same windows, cuts and words as walkWindows gives
 * for the whole audio.
 *
 * What each step needs to be the same: whether the audio goes on past the window's end (known once more
 * than that has arrived), and, before a window that is not a re-decode of carried words, whether to skip
 * silence — which depends on where the next speech region starts. Regions are final up to the point the
 * VAD tracker reports (StreamedAudio.settled); a step waits until the next region is known there, or until
 * no region can start soon enough to prevent the skip. During a long silence the skip is certain before its
 * end is known: the audio before the earliest place it can land is dropped meanwhile.
 *
 * The one inexact case, as in streamed-chunks.ts: probabilities between Silero's two thresholds right
 * after speech leave a region's end open; after two windows of that the regions are taken as they stand.
 */
import type { Word } from './ctc-decode.js';
import { commitAtPause, skipSilence, SPEECH_MARGIN_SECONDS, type WindowOptions } from './ctc-windows.js';
import { StreamedAudio, type AudioView, type VadModel } from './streamed-audio.js';

export interface StreamedWalkOptions {
  rate: number;
  options: WindowOptions;
  /** Runs the model on these samples, which start `offsetSeconds` into the whole audio; words in absolute times. */
  decode(samples: Float32Array, offsetSeconds: number): Promise<Word[]>;
  /** Where to cut inside [from, to] (seconds); `audio` holds at least those samples. */
  pickCut(audio: AudioView, from: number, to: number): number;
  /** The VAD, asked for once the audio turns out longer than one window. */
  vad(): Promise<VadModel>;
  /** Awaited before each window (cancellation) and between VAD windows. */
  checkpoint(): Promise<void>;
}

type Step = { words: Word[]; last: boolean } | 'wait' | 'done';

export async function* streamedWalk(input: AsyncIterable<Float32Array>, walk: StreamedWalkOptions): AsyncGenerator<Word[]> {
  const { rate, options } = walk;
  const max = options.maxSeconds;
  const audio = new StreamedAudio({ rate, maxSeconds: max, vad: walk.vad, checkpoint: walk.checkpoint });
  let start = 0;
  let carried = 0;

  /** The walk's next step, if the audio so far decides it (`ended`: the audio is all there). */
  const step = async (ended: boolean): Promise<Step> => {
    const now = audio.seconds; // the total, once ended
    if (!ended && !audio.tracker) return 'wait'; // one window, or more: not known yet
    let from = start;
    if (!carried && audio.tracker) {
      const regions = audio.regions();
      if (ended) {
        from = skipSilence(start, now, regions, max);
      } else {
        const settled = audio.settled();
        // Silero's rules can leave a region open for as long as probabilities stay between its two
        // thresholds; after two windows of that the regions are taken as they stand (speech going on).
        const forced = now >= start + 2 * max;
        if (settled <= start && !forced) return 'wait';
        const next = regions.find((r) => (forced || r.start < settled) && r.end > start);
        if (next) {
          from = skipSilence(start, now, [next], max);
        } else {
          // The next speech, if any, starts at or after `settled`: skipped to, if it starts far enough away.
          if (settled - SPEECH_MARGIN_SECONDS - start < max && !forced) return 'wait';
          audio.dropBefore(Math.max(start, settled - SPEECH_MARGIN_SECONDS)); // the skip lands no earlier than that
          return 'wait';
        }
      }
    }
    if (from >= now) return ended ? 'done' : 'wait';
    if (!ended && now <= from + max) return 'wait'; // whether this window is the last one is not known yet
    start = from;
    const end = Math.min(now, from + max);
    await walk.checkpoint();
    const first = Math.round(from * rate);
    const words = await walk.decode(audio.buffer.copy(first, Math.min(audio.buffer.end, Math.round(end * rate))).samples, first / rate);
    if (end >= now && ended) return { words, last: true };
    const commit = commitAtPause(words, { start: from, end }, options, (a, b) => walk.pickCut(audio.buffer.view(), a, b));
    carried = commit.carried;
    start = commit.next;
    audio.dropBefore(start);
    return { words: commit.committed, last: false };
  };

  for await (const window of input) {
    await audio.append(window);
    for (let s = await step(false); typeof s === 'object'; s = await step(false)) yield s.words;
  }
  for (let s = await step(true); typeof s === 'object'; s = await step(true)) {
    yield s.words;
    if (s.last) return;
  }
}
