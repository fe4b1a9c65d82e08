/**
 * NeMo's log-mel front end computed piece by piece, equal frame by frame to `nemoLogMel` over the whole
 * audio: pre-emphasis carries the previous sample; frame t reads samples [t·hop − n_fft/2, t·hop + n_fft/2),
 * so it is computed once that much audio has come; the audio's start is zero-padded as the whole run pads
 * it, and its end only at the final piece (`stftPadMode: constant`, NeMo ≥ 1.23).
 *
 * Only `normalize: NA` streams exactly: per_feature / all_features normalise every frame by statistics of
 * the whole utterance, which no causal computation knows before its end (the runner then keeps the windowed
 * chunk path). Reflect padding would need the first samples mirrored before frame 0 and is not streamed either.
 *
 * The state is plain numbers and one Float64Array, so it can travel between worker threads with the job.
 */
import { MelFrames, nemoFrameCount, type NemoFeatureConfig } from './nemo-features.js';

export interface LogMelStreamState {
  /** Pre-emphasised samples from absolute index `tailStart` (negative: the start's zero padding). */
  tail: Float64Array;
  tailStart: number;
  /** The last raw sample (pre-emphasis of the next one). */
  last: number;
  /** Samples pushed so far. */
  seen: number;
  /** The next frame to compute. */
  next: number;
}

export interface LogMelPiece {
  /** Row-major [nMels, frames]: the `audio_signal` layout of these frames. */
  data: Float32Array;
  frames: number;
  /** Index of the first frame, from the audio's start. */
  firstFrame: number;
  state: LogMelStreamState;
}

/** Why a feature config cannot be computed piece by piece, or null when it can. */
export function logMelStreamRefusal(config: NemoFeatureConfig): string | null {
  if (config.normalize !== 'NA') return `normalize ${config.normalize} uses whole-utterance statistics`;
  if (config.padMode !== 'constant') return `stft pad mode ${config.padMode}`;
  if (config.nFft % 2) return 'an odd n_fft';
  return null;
}

export class LogMelStream {
  private readonly frames: MelFrames;
  private readonly half: number;

  constructor(private readonly config: NemoFeatureConfig) {
    const refusal = logMelStreamRefusal(config);
    if (refusal) throw new Error(`log-mels cannot stream: ${refusal}`);
    this.frames = new MelFrames(config);
    this.half = config.nFft / 2;
  }

  initial(): LogMelStreamState {
    return { tail: new Float64Array(this.half), tailStart: -this.half, last: 0, seen: 0, next: 0 };
  }

  /** Adds `samples`; returns every frame now complete (at the final piece: every frame left, end padded). */
  push(state: LogMelStreamState, samples: Float32Array, final: boolean): LogMelPiece {
    const { hopLength, nMels, nFft, preemph } = this.config;
    const seen = state.seen + samples.length;
    const last = final ? nemoFrameCount(seen, this.config) : Math.max(0, Math.floor((seen - this.half) / hopLength) + 1);
    const count = Math.max(0, last - state.next);
    // The tail grows by the new samples, and at the end by the zero padding the last frames read.
    const end = final ? Math.max(seen, (last - 1) * hopLength - this.half + nFft) : seen;
    const tail = new Float64Array(end - state.tailStart);
    tail.set(state.tail);
    let previous = state.last;
    for (let i = 0; i < samples.length; i++) {
      const x = samples[i]!;
      const at = state.seen + i;
      tail[at - state.tailStart] = at === 0 || preemph === 0 ? x : x - preemph * previous;
      previous = x;
    }
    const data = new Float32Array(nMels * count);
    for (let k = 0; k < count; k++) this.frames.frame(tail, (state.next + k) * hopLength - this.half - state.tailStart, data, count, k);
    const next = state.next + count;
    // Keep what the next frame starts from (and nothing before the start's padding).
    const keepFrom = Math.max(state.tailStart, Math.min(seen, next * hopLength - this.half));
    const kept = tail.slice(keepFrom - state.tailStart, seen - state.tailStart);
    return {
      data,
      frames: count,
      firstFrame: state.next,
      state: { tail: kept, tailStart: keepFrom, last: samples.length ? samples[samples.length - 1]! : state.last, seen, next },
    };
  }
}
