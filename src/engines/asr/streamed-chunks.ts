/**
 * Cuts audio that arrives in windows into the chunks the ASR runners decode, as it arrives, holding about
 * two chunks of it at most: the plan is the one planChunks makes for the whole audio (same VAD regions,
 * same cuts, same dropped silent chunks), so a transcript does not depend on how the audio was windowed.
 *
 * Why it is the same plan: audio up to `maxChunkSeconds` is one chunk, without VAD, as before. Longer audio
 * is planned step by step (chunkSteps); a step from `start` depends on the VAD regions up to
 * `start + maxChunkSeconds` (its window), on the audio going on past that, and on one thing further away:
 * whether any speech comes after the window's last region (the pause after it is a gap to cut in only if
 * speech follows). Silero VAD is recurrent and its hysteresis causal, so once the audio reaches the
 * window's end + `settleSeconds` the regions in the window are final (silero-vad.ts) and the step is taken
 * assuming speech follows; a step with speech whose cut depends on that assumption is held back (with its
 * samples and the cut it would have otherwise) until speech does follow or the input ends. Audio and
 * regions before the latest step are dropped.
 */
import { DEFAULT_VAD_OPTIONS, RegionTracker, settleSeconds, type SpeechRegion } from '../vad/silero-vad.js';
import { chunkSteps } from './ctc-decode.js';

/** Part of the whole audio: `samples[i]` is sample `offset + i`. */
export interface AudioView {
  samples: Float32Array;
  offset: number;
}

/** What the planner needs of a VAD (SileroVad): window probabilities over audio pushed in pieces. */
export interface VadModel {
  stream(checkpoint?: () => Promise<void>): { push(samples: Float32Array): Promise<Float32Array> };
}

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
  /** The VAD regions overlapping the chunk, in order (none when the audio is one chunk). */
  regions: SpeechRegion[];
  /** A copy of samples [round(from·rate), round(to·rate)) of the whole audio (within the chunk), and where they start. */
  slice(from: number, to: number): { samples: Float32Array; offsetSeconds: number };
}

/** Samples kept before a step's start: quietestPoint reads from floor(from · rate). */
const KEEP_BEFORE = 16;

/** A sliding piece of the audio: appended at the end, dropped from the front. */
class SampleBuffer {
  private data = new Float32Array(0);
  offset = 0;
  length = 0;

  get end(): number {
    return this.offset + this.length;
  }

  view(): AudioView {
    return { samples: this.data.subarray(0, this.length), offset: this.offset };
  }

  append(samples: Float32Array): void {
    if (this.length + samples.length > this.data.length) {
      const grown = new Float32Array(Math.max(this.length + samples.length, this.data.length * 2));
      grown.set(this.data.subarray(0, this.length));
      this.data = grown;
    }
    this.data.set(samples, this.length);
    this.length += samples.length;
  }

  dropBefore(sample: number): void {
    const n = Math.min(this.length, sample - this.offset);
    if (n <= 0) return;
    this.data.copyWithin(0, n, this.length);
    this.offset += n;
    this.length -= n;
  }

  copy(from: number, to: number): AudioView {
    const first = Math.max(from, this.offset);
    return { samples: this.data.slice(first - this.offset, Math.max(first, Math.min(this.end, to)) - this.offset), offset: first };
  }
}

/** A chunk over `audio`, which holds at least its samples. */
function chunkOf(from: number, to: number, regions: SpeechRegion[], audio: () => AudioView, rate: number): PlannedChunk {
  return {
    start: from,
    end: to,
    regions: regions.filter((r) => r.end > from && r.start < to),
    slice: (a, b) => {
      const { samples, offset } = audio();
      const first = Math.round(a * rate);
      const last = Math.min(offset + samples.length, Math.round(b * rate));
      return { samples: samples.slice(first - offset, Math.max(first, last) - offset), offsetSeconds: first / rate };
    },
  };
}

/** A speech step whose cut depends on whether speech follows its last region. */
interface HeldStep {
  start: number;
  /** The cut if speech follows (the plan went on from there), and if none does. */
  ifMore: number;
  ifNone: number;
  lastRegionEnd: number;
  regions: SpeechRegion[];
  audio: AudioView;
}

export async function* plannedChunks(input: AsyncIterable<Float32Array>, options: ChunkPlanOptions): AsyncGenerator<PlannedChunk> {
  const { rate, maxChunkSeconds: max } = options;
  const settle = settleSeconds(DEFAULT_VAD_OPTIONS);
  const buffer = new SampleBuffer();
  let tracker: RegionTracker | null = null;
  let vad: ReturnType<VadModel['stream']> | null = null;
  let start = 0;
  let held: HeldStep | null = null;
  const pick = (from: number, to: number) => options.pickCut(buffer.view(), from, to);
  const live = (from: number, to: number, regions: SpeechRegion[]) => chunkOf(from, to, regions, () => buffer.view(), rate);
  const release = (h: HeldStep, end: number) => chunkOf(h.start, end, h.regions, () => h.audio, rate);

  for await (const window of input) {
    buffer.append(window);
    if (vad && tracker) {
      for (const p of await vad.push(window)) tracker.push(p);
    } else if (buffer.end / rate > max) {
      // Longer than one chunk: planned on VAD regions from here on, starting at the first sample (still held).
      vad = (await options.vad()).stream(() => options.checkpoint());
      tracker = new RegionTracker(DEFAULT_VAD_OPTIONS);
      for (const p of await vad.push(buffer.view().samples)) tracker.push(p);
    }
    // Take every step the audio so far settles.
    while (tracker && buffer.end / rate >= start + max + settle) {
      const now = buffer.end / rate;
      const regions = tracker.regions(buffer.end);
      const settledAfter = (t: number) => regions.some((r) => r.start > t && r.start <= now - settle);
      if (held && settledAfter(held.lastRegionEnd)) {
        yield release(held, held.ifMore);
        held = null;
      }
      // Assume speech follows (a region at the end of the audio so far): true whenever the assumption matters below.
      const step = chunkSteps([...regions, { start: now, end: now }], now, max, pick, start).next().value!;
      if (step.speech) {
        const limit = start + max;
        const last = regions.filter((r) => r.start < limit).at(-1)!;
        if (last.end >= limit || settledAfter(last.end)) {
          yield live(step.start, step.end, regions);
        } else {
          const alone = regions.filter((r) => r.start <= last.start);
          const ifNone = chunkSteps(alone, now, max, pick, start).next().value!.end;
          const audio = buffer.copy(Math.round(start * rate), Math.round(limit * rate));
          held = { start, ifMore: step.end, ifNone, lastRegionEnd: last.end, regions: regions.filter((r) => r.start < limit), audio };
        }
      }
      start = step.end;
      tracker.forget(start);
      buffer.dropBefore(Math.floor(start * rate) - KEEP_BEFORE);
    }
  }
  const total = buffer.end / rate;
  if (!tracker) {
    yield live(0, total, []);
    return;
  }
  const regions = tracker.regions(buffer.end);
  if (held) {
    const more = regions.some((r) => r.start > held!.lastRegionEnd);
    yield release(held, more ? held.ifMore : held.ifNone);
    if (!more) return; // nothing but silence after it: the remaining steps would all be dropped
  }
  for (const step of chunkSteps(regions, total, max, pick, start)) if (step.speech) yield live(step.start, step.end, regions);
}

/** A whole array as a one-window input. */
export async function* oneWindow(samples: Float32Array): AsyncGenerator<Float32Array> {
  yield samples;
}
