/**
 * One stream's Silero probabilities with the energy gate of silero-batch.ts (a window below the floor, after a
 * quiet window the model already called silence, scores 0 without a model run): what the upload paths use to
 * find silence in long audio. An hour of digital silence then costs a few windows of model time instead of
 * 112,500 runs. The rule, its thresholds and its reset state are the batch scorer's own (it runs as a batch
 * of one), so realtime sessions and uploads see the same gate.
 */
import { vadGeometry, dbfsToRms, DEFAULT_GATE_FLOOR_DBFS, VAD_STATE, VAD_WINDOW, type VadBatch, type VadBatchResult } from './silero-batch.js';

export interface BatchScorer {
  scoreBatch(batch: VadBatch, checkpoint?: () => Promise<void>): Promise<VadBatchResult>;
}

export class GatedVadStream {
  private readonly geometry = vadGeometry(16000);
  private state: Float32Array = new Float32Array(VAD_STATE);
  private context: Float32Array = new Float32Array(this.geometry.context);
  private lastProb = 0;
  private quiet = 0;
  /** The start of the next window (fewer than VAD_WINDOW samples). */
  private partial = new Float32Array(VAD_WINDOW);
  private filled = 0;
  private readonly floorRms: number;

  constructor(
    private readonly scorer: BatchScorer,
    private readonly checkpoint?: () => Promise<void>,
    floorDbfs = DEFAULT_GATE_FLOOR_DBFS,
  ) {
    this.floorRms = dbfsToRms(floorDbfs);
  }

  /** Probabilities of the full windows `samples` completes (a partial window waits for more), in order. */
  async push(samples: Float32Array): Promise<Float32Array> {
    const windows = Math.floor((this.filled + samples.length) / VAD_WINDOW);
    const rest = (this.filled + samples.length) % VAD_WINDOW;
    if (windows === 0) {
      this.partial.set(samples, this.filled);
      this.filled += samples.length;
      return new Float32Array(0);
    }
    const joined = new Float32Array(windows * VAD_WINDOW);
    joined.set(this.partial.subarray(0, this.filled));
    joined.set(samples.subarray(0, windows * VAD_WINDOW - this.filled), this.filled);
    this.partial.set(samples.subarray(samples.length - rest));
    this.filled = rest;
    const result = await this.scorer.scoreBatch(
      {
        counts: Int32Array.of(windows),
        states: this.state,
        contexts: this.context,
        lastProbs: Float32Array.of(this.lastProb),
        quiet: Uint8Array.of(this.quiet),
        samples: joined,
        floorRms: this.floorRms,
      },
      this.checkpoint,
    );
    this.state = result.states;
    this.context = result.contexts;
    this.lastProb = result.lastProbs[0]!;
    this.quiet = result.quiet[0]!;
    return result.probabilities;
  }
}
