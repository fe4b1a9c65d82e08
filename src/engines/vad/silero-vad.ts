/**
 * Silero VAD v5 (MIT; the .onnx ships inside the @ricky0123/vad-web npm package): speech probability per
 * 32 ms window at 16 kHz, and speech regions found with Silero's own hysteresis rules (start above
 * `threshold`, end after `minSilenceMs` below `threshold − 0.15`, drop regions shorter than
 * `minSpeechMs`, pad each side by `speechPadMs`). Runs where onnxruntime may block: inside a worker.
 *
 * Both halves also work incrementally, for audio that arrives in windows (VadStream, RegionTracker): the
 * model is recurrent and each window sees only the previous one's tail, so probabilities computed piece
 * by piece are the same numbers as over the whole audio; the hysteresis is causal, so regions found so
 * far are final before `RegionTracker.settledUntil`.
 */
import path from 'node:path';
import { createRequire } from 'node:module';
import { createSession, ort, requireSignature, type LoadedSession, type SessionOptions } from '../onnx/session.js';
import { GatedVadStream } from './gated-stream.js';
import { scoreBatch, silenceState, vadGeometry, VAD_WINDOW, type VadBatch, type VadBatchResult, type VadRate } from './silero-batch.js';

export const VAD_SAMPLE_RATE = 16000;

export interface VadOptions {
  threshold: number;
  minSpeechMs: number;
  minSilenceMs: number;
  speechPadMs: number;
}

export const DEFAULT_VAD_OPTIONS: VadOptions = { threshold: 0.5, minSpeechMs: 250, minSilenceMs: 300, speechPadMs: 30 };

export interface SpeechRegion {
  start: number;
  end: number;
}

export function defaultSileroFile(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('@ricky0123/vad-web/package.json')), 'dist', 'silero_vad_v5.onnx');
}

export class SileroVad {
  /** The energy gate's reset state, per rate (computed once, on first use). */
  private readonly silence = new Map<VadRate, Promise<Float32Array>>();

  private constructor(private readonly loaded: LoadedSession) {}

  static async load(options: SessionOptions, file = defaultSileroFile()): Promise<SileroVad> {
    const loaded = await createSession(file, options);
    requireSignature(loaded, ['input', 'state', 'sr'], ['output', 'stateN']);
    return new SileroVad(loaded);
  }

  /** Speech probability of each full 512-sample window. `checkpoint` is awaited every ~100 windows. */
  async probabilities(samples: Float32Array, checkpoint?: () => Promise<void>): Promise<Float32Array> {
    return this.stream(checkpoint).push(samples);
  }

  /**
   * Probabilities of audio that arrives in pieces: the same numbers as `probabilities` over the whole.
   * At rate 8000 the stream takes 8 kHz samples (256-sample windows) and runs Silero's 8 kHz mode.
   */
  stream(checkpoint?: () => Promise<void>, rate: VadRate = 16000): VadStream {
    return new VadStream(this.loaded, checkpoint, rate);
  }

  /** Probabilities of audio that arrives in pieces, with the energy gate (gated-stream.ts): for long uploads. */
  gatedStream(checkpoint?: () => Promise<void>): GatedVadStream {
    return new GatedVadStream(this, checkpoint);
  }

  /** The pending windows of many streams in one job, batched per step (silero-batch.ts). */
  async scoreBatch(batch: VadBatch, checkpoint?: () => Promise<void>): Promise<VadBatchResult> {
    const rate = batch.rate ?? 16000;
    let silence = this.silence.get(rate);
    if (!silence) this.silence.set(rate, (silence = silenceState(this.loaded, rate)));
    return scoreBatch(this.loaded, batch, await silence, checkpoint);
  }

  async detect(samples: Float32Array, options: Partial<VadOptions> = {}, checkpoint?: () => Promise<void>): Promise<SpeechRegion[]> {
    const probs = await this.probabilities(samples, checkpoint);
    return regionsFromProbabilities(probs, samples.length, { ...DEFAULT_VAD_OPTIONS, ...options });
  }

  async close(): Promise<void> {
    await this.loaded.release();
  }
}

/** One model state carried across pieces of audio; windows straddling two pieces are joined. */
export class VadStream {
  private state: InstanceType<typeof ort.Tensor>;
  private readonly sr: InstanceType<typeof ort.Tensor>;
  private readonly window: number;
  private readonly context: number;
  /** The previous window's last `context` samples (zeros before the first), then the window being filled. */
  private readonly input: Float32Array;
  private filled = 0;
  private windows = 0;

  constructor(
    private readonly loaded: LoadedSession,
    private readonly checkpoint?: () => Promise<void>,
    rate: VadRate = 16000,
  ) {
    ({ window: this.window, context: this.context } = vadGeometry(rate));
    this.input = new Float32Array(this.context + this.window);
    this.sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(rate)]), []);
    this.state = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
  }

  /** Probabilities of the full windows that `samples` completes (a partial window waits for more). */
  async push(samples: Float32Array): Promise<Float32Array> {
    const { window, context } = this;
    const probs = new Float32Array(Math.floor((this.filled + samples.length) / window));
    let k = 0;
    for (let at = 0; at < samples.length;) {
      const n = Math.min(samples.length - at, window - this.filled);
      this.input.set(samples.subarray(at, at + n), context + this.filled);
      this.filled += n;
      at += n;
      if (this.filled < window) break;
      const out = await this.loaded.run({ input: new ort.Tensor('float32', this.input.slice(), [1, context + window]), state: this.state, sr: this.sr });
      probs[k++] = (out.output!.data as Float32Array)[0]!;
      this.state = out.stateN as typeof this.state;
      this.input.copyWithin(0, window, window + context); // this window's tail is the next one's context
      this.filled = 0;
      if (this.checkpoint && this.windows++ % 100 === 99) await this.checkpoint();
    }
    return probs;
  }
}

/** Silero's hysteresis over window probabilities; pure, so it is unit-tested on made-up sequences. */
export function regionsFromProbabilities(probs: ArrayLike<number>, totalSamples: number, options: VadOptions): SpeechRegion[] {
  const tracker = new RegionTracker(options);
  for (let w = 0; w < probs.length; w++) tracker.push(probs[w]!);
  return tracker.regions(totalSamples);
}

/** The hysteresis one window probability at a time; `regions(n)` gives what the first n samples show. */
export class RegionTracker {
  private readonly negThreshold: number;
  private readonly minSilence: number;
  private readonly minSpeech: number;
  private readonly pad: number;
  /** Closed regions, in samples. */
  private raw: Array<{ start: number; end: number }> = [];
  private window = 0;
  private inSpeech = false;
  private start = 0;
  private silenceStart = -1;

  constructor(private readonly options: VadOptions) {
    this.negThreshold = Math.max(options.threshold - 0.15, 0.01);
    this.minSilence = (options.minSilenceMs * VAD_SAMPLE_RATE) / 1000;
    this.minSpeech = (options.minSpeechMs * VAD_SAMPLE_RATE) / 1000;
    this.pad = (options.speechPadMs * VAD_SAMPLE_RATE) / 1000;
  }

  push(p: number): void {
    const at = this.window++ * VAD_WINDOW;
    if (p >= this.options.threshold) this.silenceStart = -1;
    if (!this.inSpeech && p >= this.options.threshold) {
      this.inSpeech = true;
      this.start = at;
    } else if (this.inSpeech && p < this.negThreshold) {
      if (this.silenceStart < 0) this.silenceStart = at;
      if (at + VAD_WINDOW - this.silenceStart >= this.minSilence) {
        this.raw.push({ start: this.start, end: this.silenceStart });
        this.inSpeech = false;
        this.silenceStart = -1;
      }
    }
  }

  /**
   * The sample before which `regions(n)` is final, whatever audio follows. Closed regions are; a region
   * still open ends no earlier than its pending silence's start (or the first window not seen yet, if none
   * is pending), and is certain to be kept once that is `minSpeech` after its start — else even its
   * existence waits; a new region may start at the first window not seen yet, padded back. Silero's rules
   * close a pending silence only at a window below `threshold − 0.15`, so probabilities between that and
   * `threshold` can keep this point still for as long as they last.
   */
  settledUntil(): number {
    const seen = this.window * VAD_WINDOW;
    if (!this.inSpeech) return Math.max(0, seen - this.pad);
    const endAtLeast = this.silenceStart >= 0 ? this.silenceStart : seen;
    return endAtLeast - this.start >= this.minSpeech ? endAtLeast : Math.max(0, this.start - this.pad);
  }

  /** Regions (seconds, padded and merged) of audio `totalSamples` long, as if it ended there. */
  regions(totalSamples: number): SpeechRegion[] {
    const raw = this.inSpeech ? [...this.raw, { start: this.start, end: totalSamples }] : this.raw;
    const kept = raw.filter((r) => r.end - r.start >= this.minSpeech);
    // Pad, then merge regions the padding made touch.
    const padded: SpeechRegion[] = [];
    for (const r of kept) {
      const s = Math.max(0, r.start - this.pad);
      const e = Math.min(totalSamples, r.end + this.pad);
      const last = padded.at(-1);
      if (last && s <= last.end * VAD_SAMPLE_RATE) last.end = e / VAD_SAMPLE_RATE;
      else padded.push({ start: s / VAD_SAMPLE_RATE, end: e / VAD_SAMPLE_RATE });
    }
    return padded;
  }

  /**
   * Drops closed regions that end (padded) before `seconds`, but the last one long enough to keep:
   * callers that plan from `seconds` on need the regions after it and whether one came before (that one
   * may come out with an earlier start than it would have, when it had merged with a dropped one; it
   * still starts and ends before `seconds`).
   */
  forget(seconds: number): void {
    let last = -1;
    for (let i = 0; i < this.raw.length && this.raw[i]!.end + this.pad <= seconds * VAD_SAMPLE_RATE; i++) {
      if (this.raw[i]!.end - this.raw[i]!.start >= this.minSpeech) last = i;
    }
    if (last > 0) this.raw = this.raw.slice(last);
  }
}
