/**
 * Cuts audio that arrives in windows into the chunks the ASR runners decode, as it arrives, holding a few
 * chunks of it at most: the plan is the one planChunks makes for the whole audio (same VAD regions, same
 * cuts, same dropped silent chunks), so a transcript does not depend on how the audio was windowed.
 *
 * Why it is the same plan: audio up to `maxChunkSeconds` is one chunk, without VAD, as before. Longer audio
 * is planned step by step (chunkSteps); a step from `start` depends on the VAD regions up to
 * `start + maxChunkSeconds` (its window), on the audio going on past that, and on one thing further away:
 * whether any speech comes after the window's last region (the pause after it is a gap to cut in only if
 * speech follows). Silero VAD is recurrent and its hysteresis causal, so the regions are final up to a
 * point the tracker knows (RegionTracker.settledUntil); once that passes the window, the step is taken
 * assuming speech follows, and a step with speech whose cut depends on that assumption is held back
 * (with its audio, two chunks of it) until speech does follow or the input ends. Audio and regions before
 * the latest step are dropped.
 *
 * The one inexact case: Silero's rules end a region only at a window below `threshold − 0.15`, so
 * probabilities between the two thresholds right after speech leave the region's end open for as long as
 * they last. After a further `maxChunkSeconds` of that, the step is taken on the regions as they stand
 * (the speech treated as going on), rather than holding audio without bound.
 */
import type { SpeechRegion } from '../vad/silero-vad.js';
import { chunkSteps } from './ctc-decode.js';
import { KEEP_BEFORE, SampleBuffer, StreamedAudio, type AudioView, type VadModel } from './streamed-audio.js';

export type { AudioView, VadModel } from './streamed-audio.js';
export { oneWindow } from './streamed-audio.js';

export interface ChunkPlanOptions {
  rate: number;
  maxChunkSeconds: number;
  /** Where to cut within [from, to] (seconds of the whole audio); `audio` holds at least those samples. */
  pickCut(audio: AudioView, from: number, to: number): number;
  /** The VAD, asked for once the audio turns out longer than one chunk. */
  vad(): Promise<VadModel>;
  /** Awaited between VAD windows, so a cancel is seen. */
  checkpoint(): Promise<void>;
}

export interface PlannedChunk {
  /** Seconds of the whole audio. */
  start: number;
  end: number;
  /**
   * The VAD regions within the chunk, clipped to it, in order (none when the audio is one chunk). Clipped
   * because a region running past the chunk may not have ended yet when the chunk is planned.
   */
  regions: SpeechRegion[];
  /** A copy of samples [round(from·rate), round(to·rate)) of the whole audio (within the chunk), and where they start. */
  slice(from: number, to: number): { samples: Float32Array; offsetSeconds: number };
}

/** A chunk over `audio`, which holds at least its samples. */
function chunkOf(from: number, to: number, regions: SpeechRegion[], audio: () => AudioView, rate: number): PlannedChunk {
  return {
    start: from,
    end: to,
    regions: regions.filter((r) => r.end > from && r.start < to).map((r) => ({ start: Math.max(r.start, from), end: Math.min(r.end, to) })),
    slice: (a, b) => {
      const { samples, offset } = audio();
      const first = Math.round(a * rate);
      const last = Math.min(offset + samples.length, Math.round(b * rate));
      return { samples: samples.slice(first - offset, Math.max(first, last) - offset), offsetSeconds: first / rate };
    },
  };
}

/**
 * A speech step whose cut depends on whether speech follows its last region. If speech follows, the cut
 * is `ifMore` (the plan went on from there); if none does, the steps from `start` are re-planned at the
 * end of the input with the final regions: they may reach one chunk past the last region, so the audio is
 * held from `start` for two chunks.
 */
interface HeldStep {
  start: number;
  ifMore: number;
  lastRegionEnd: number;
  /** Regions up to the step's window end, as they were when the step was held (all final). */
  regions: SpeechRegion[];
  audio: SampleBuffer;
  /** Where the held audio stops growing (sample index). */
  audioEnd: number;
}

export async function* plannedChunks(input: AsyncIterable<Float32Array>, options: ChunkPlanOptions): AsyncGenerator<PlannedChunk> {
  const { rate, maxChunkSeconds: max } = options;
  const audio = new StreamedAudio({ rate, maxSeconds: max, vad: options.vad, checkpoint: options.checkpoint });
  const buffer = audio.buffer;
  let start = 0;
  let held: HeldStep | null = null;
  const pick = (from: number, to: number) => options.pickCut(buffer.view(), from, to);
  const live = (from: number, to: number, regions: SpeechRegion[]) => chunkOf(from, to, regions, () => buffer.view(), rate);
  const fromHeld = (h: HeldStep, from: number, to: number, regions: SpeechRegion[]) => chunkOf(from, to, regions, () => h.audio.view(), rate);

  for await (const window of input) {
    await audio.append(window);
    if (held && held.audio.end < held.audioEnd) held.audio.append(window.subarray(0, held.audioEnd - held.audio.end));
    // Take every step the audio so far settles.
    while (audio.tracker) {
      const now = audio.seconds;
      const limit = start + max;
      // Regions are final up to `settled`. Silero's hysteresis can leave that point behind for as long as
      // probabilities stay between its two thresholds; after a further chunk of that the step is taken
      // on the regions as they stand (the one case where the plan can differ from the whole audio's).
      const settled = audio.settled();
      const forced = settled < limit && now >= limit + max;
      // The step also needs the audio to go on past its window (else it would be the last one, to the end).
      if (now <= limit || (settled < limit && !forced)) break;
      const known = forced ? now : settled;
      const regions = audio.regions();
      const speechAfter = (t: number) => regions.some((r) => r.start > t && r.start < known); // [0, known) is final
      if (held && speechAfter(held.lastRegionEnd)) {
        yield fromHeld(held, held.start, held.ifMore, held.regions);
        held = null;
      }
      // Assume speech follows (a region at the end of the audio so far): true whenever the assumption matters below.
      const step = chunkSteps([...regions, { start: now, end: now }], now, max, pick, start).next().value!;
      if (step.speech) {
        const last = regions.filter((r) => r.start < limit).at(-1)!;
        if (last.end >= limit || speechAfter(last.end)) {
          yield live(step.start, step.end, regions);
        } else {
          const first = Math.round(start * rate);
          const kept = new SampleBuffer();
          const view = buffer.copy(first - KEEP_BEFORE, buffer.end);
          kept.offset = view.offset;
          kept.append(view.samples);
          held = {
            start,
            ifMore: step.end,
            lastRegionEnd: last.end,
            regions: regions.filter((r) => r.start < limit),
            audio: kept,
            audioEnd: first + Math.ceil(2 * max * rate) + KEEP_BEFORE,
          };
        }
      }
      start = step.end;
      audio.dropBefore(start);
    }
  }
  const total = audio.seconds;
  if (!audio.tracker) {
    yield live(0, total, []);
    return;
  }
  const regions = audio.regions();
  if (held) {
    const h: HeldStep = held;
    if (!regions.some((r) => r.start > h.lastRegionEnd)) {
      // No speech after it: plan from the held step again as the whole audio would be, up to the last region
      // (every step after it is silent, hence dropped).
      const pickHeld = (from: number, to: number) => options.pickCut(h.audio.view(), from, to);
      for (const step of chunkSteps(h.regions, total, max, pickHeld, h.start)) {
        if (step.speech) yield fromHeld(h, step.start, step.end, h.regions);
        if (step.end >= h.lastRegionEnd) break; // the next step would start after the last speech
      }
      return;
    }
    yield fromHeld(h, h.start, h.ifMore, h.regions);
  }
  for (const step of chunkSteps(regions, total, max, pick, start)) if (step.speech) yield live(step.start, step.end, regions);
}
