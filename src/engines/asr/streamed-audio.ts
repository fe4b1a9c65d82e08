/**
 * Audio that arrives in windows, as the ASR runners hold it: a sliding buffer of the samples not yet
 * decoded (appended at the end, dropped from the front), and — once the audio turns out longer than one
 * model window — Silero VAD run incrementally over it from the first sample, with the regions it has found
 * so far and the point before which they are final (RegionTracker.settledUntil). The runners' planners
 * (streamed-chunks.ts for Whisper) decide from these what the whole-audio
 * planners would, without holding the whole audio.
 */
import { DEFAULT_VAD_OPTIONS, RegionTracker, type SpeechRegion } from '../vad/silero-vad.js';

/** Part of the whole audio: `samples[i]` is sample `offset + i`. */
export interface AudioView {
  samples: Float32Array;
  offset: number;
}

/** What the planners need of a VAD (SileroVad): window probabilities over audio pushed in pieces. */
export interface VadModel {
  stream(checkpoint?: () => Promise<void>): { push(samples: Float32Array): Promise<Float32Array> };
}

/** Samples kept before a planner's position: quietestPoint reads from floor(from · rate). */
export const KEEP_BEFORE = 16;

/** A sliding piece of the audio: appended at the end, dropped from the front. */
export class SampleBuffer {
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

  /** A copy of samples [from, to), as far as they are held. */
  copy(from: number, to: number): AudioView {
    const first = Math.max(from, this.offset);
    return { samples: this.data.slice(first - this.offset, Math.max(first, Math.min(this.end, to)) - this.offset), offset: first };
  }
}

export interface StreamedAudioOptions {
  rate: number;
  /** The model's longest window: audio longer than this gets VAD. */
  maxSeconds: number;
  vad(): Promise<VadModel>;
  /** Awaited between VAD windows, so a cancel is seen. */
  checkpoint(): Promise<void>;
}

export class StreamedAudio {
  readonly buffer = new SampleBuffer();
  /** Set once the audio is longer than one window (the whole-audio runners run VAD only then). */
  tracker: RegionTracker | null = null;
  private vad: ReturnType<VadModel['stream']> | null = null;

  constructor(private readonly options: StreamedAudioOptions) {}

  /** Seconds received so far. */
  get seconds(): number {
    return this.buffer.end / this.options.rate;
  }

  async append(window: Float32Array): Promise<void> {
    this.buffer.append(window);
    if (this.vad && this.tracker) {
      for (const p of await this.vad.push(window)) this.tracker.push(p);
    } else if (this.seconds > this.options.maxSeconds) {
      // Longer than one window: VAD from here on, starting at the first sample (nothing was dropped yet).
      this.vad = (await this.options.vad()).stream(() => this.options.checkpoint());
      this.tracker = new RegionTracker(DEFAULT_VAD_OPTIONS);
      for (const p of await this.vad.push(this.buffer.view().samples)) this.tracker.push(p);
    }
  }

  /** The regions as the audio so far shows them (seconds); final before settled(). */
  regions(): SpeechRegion[] {
    return this.tracker ? this.tracker.regions(this.buffer.end) : [];
  }

  /** Seconds before which regions() is final, whatever audio follows. */
  settled(): number {
    return this.tracker ? this.tracker.settledUntil() / this.options.rate : 0;
  }

  /** Drops the audio (and closed regions) before `seconds`, keeping a few samples for the cut search. */
  dropBefore(seconds: number): void {
    this.tracker?.forget(seconds);
    this.buffer.dropBefore(Math.floor(seconds * this.options.rate) - KEEP_BEFORE);
  }
}

/** A whole array as a one-window input. */
export async function* oneWindow(samples: Float32Array): AsyncGenerator<Float32Array> {
  yield samples;
}
