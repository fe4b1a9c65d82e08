/**
 * Silero VAD over the pending windows of many independent streams (realtime sessions) in one job, with a
 * batch dimension: the v5 export takes input [B, 576] and state [2, B, 128], and each row's output is the
 * same number a batch-1 run of that row gives (measured: max difference 0 on demo speech). Step k runs
 * window k of every stream that has one, so rows shrink as short streams run out.
 *
 * Two rates, the same 32 ms windows: at 16000 the model sees each 512-sample window as it came; at 8000 the
 * job's 16 kHz samples are first decimated here, in the worker (half-band.ts), and the model runs in its
 * 8 kHz mode (input [B, 288]: 256 samples + 32 of context), ≈ 1.7× cheaper per window (measured with
 * onnxruntime directly at batch 16–256: ≈ 33 vs 58 µs CPU). Window k is the same 32 ms either way.
 *
 * The worker stays stateless: each stream's carry (recurrent state, the previous window's last 64 samples
 * at 16 kHz or 32 at 8 kHz, at 8 kHz the decimator's last 50 input samples, the previous window's
 * probability and whether it was quiet) arrives with the job and goes back updated.
 *
 * Energy gate: a window whose RMS is below `floorRms`, when the stream's previous window was also below it
 * AND the model scored that previous window under GATE_MAX_PREVIOUS (the model itself says "silence, not a
 * speech tail"), scores 0 without a model run and resets the stream's carry to the silence carry: the state
 * a fresh stream reaches after SILENCE_WARMUP_WINDOWS windows of digital silence, zero context. Measured on
 * demo speech (test/unit/realtime/vad): the probability condition matters because Silero's recurrent state
 * keeps scoring digital silence as speech for up to ~10 windows after quiet speech ends (at −40 dB gain:
 * 0.96 … 0.40 over 320 ms), so an energy-only gate would end turns early; and the reset state matters
 * because a fresh (all-zero) state makes Silero deaf to the next quiet onset (at −45 dB it found no turn at
 * all), while the silence state gives the same turns as no gate, within a window or two.
 */
import { ort, type LoadedSession } from '../onnx/session.js';
import { HALF_BAND_HISTORY, decimateHalfBand } from './half-band.js';

/**
 * Samples of one VAD window at 16 kHz (32 ms): the unit every VAD user counts in. Defined here, the
 * lowest VAD module, so that silero-vad.ts and the realtime side import it without a circle.
 */
export const VAD_WINDOW = 512;

/** The rate the model scores at; the job's samples are always 16 kHz. */
export type VadRate = 16000 | 8000;
export const VAD_RATES: readonly VadRate[] = [16000, 8000];

/** What one 32 ms window looks like to the model at each rate. */
export interface VadGeometry {
  /** Samples per window at the model's rate. */
  window: number;
  /** Samples of the previous window that v5 expects in front of each window. */
  context: number;
  /** Decimator memory carried per stream (16 kHz samples); 0 when nothing is decimated. */
  history: number;
}

export function vadGeometry(rate: VadRate): VadGeometry {
  return rate === 8000 ? { window: 256, context: 32, history: HALF_BAND_HISTORY } : { window: VAD_WINDOW, context: 64, history: 0 };
}

/** Floats of one stream's recurrent state: 2 layers × 128. */
export const VAD_STATE = 256;
const HIDDEN = 128;
/** A quiet window is gated only when the model scored the previous (quiet) window below this. */
export const GATE_MAX_PREVIOUS = 0.1;
/**
 * −60 dBFS RMS: digital silence and quiet line noise (μ-law idle, a muted or noise-suppressed microphone) sit far
 * below it; normal speech sits at −15 … −35 dBFS (the realtime scheduler's and the upload paths' default floor).
 */
export const DEFAULT_GATE_FLOOR_DBFS = -60;
/** Windows of digital silence (≈1 s) after which Silero's state has settled: the gate's reset state. */
export const SILENCE_WARMUP_WINDOWS = 30;

/** One job: the pending windows of C streams, stream after stream (all arrays are indexed by stream). */
export interface VadBatch {
  /** Windows of each stream in this job. */
  counts: Int32Array;
  /** C × 256: each stream's recurrent state (layer 0's 128 floats, then layer 1's). */
  states: Float32Array;
  /** C × context (vadGeometry): the tail of each stream's previous window at the model's rate (zeros for a fresh stream). */
  contexts: Float32Array;
  /** C × history (vadGeometry): at 8 kHz, each stream's last 16 kHz samples, the decimator's memory (zeros for a fresh stream). */
  histories?: Float32Array;
  /** Probability of each stream's previous window (0 for a fresh stream). */
  lastProbs: Float32Array;
  /** 1 where the stream's previous window was below the energy floor. */
  quiet: Uint8Array;
  /** Σcounts × 512 samples, stream-major: stream 0's windows in order, then stream 1's, … */
  samples: Float32Array;
  /** Linear RMS under which a window is quiet; 0 turns the energy gate off. */
  floorRms: number;
  /** Largest batch per model run (1 = one run per window: the unbatched baseline the benchmark compares). */
  maxRows?: number;
  /** The rate the model scores at (default 16000). */
  rate?: VadRate;
}

/** The job's answer: the updated carry (same arrays) and one probability per window, in `samples` order. */
export interface VadBatchResult {
  states: Float32Array;
  contexts: Float32Array;
  histories?: Float32Array;
  lastProbs: Float32Array;
  quiet: Uint8Array;
  probabilities: Float32Array;
  /** Windows the model ran, and windows the energy gate scored 0 without it. */
  modelWindows: number;
  gatedWindows: number;
}

/** −60 dBFS → 0.001: the linear RMS a dBFS floor stands for. */
export function dbfsToRms(dbfs: number): number {
  return 10 ** (dbfs / 20);
}

/** The recurrent state (256 floats) of a fresh stream after SILENCE_WARMUP_WINDOWS windows of zeros, at `rate`. */
export async function silenceState(loaded: LoadedSession, rate: VadRate = 16000): Promise<Float32Array> {
  const geometry = vadGeometry(rate);
  const carry: VadBatch = {
    counts: Int32Array.of(SILENCE_WARMUP_WINDOWS),
    states: new Float32Array(VAD_STATE),
    contexts: new Float32Array(geometry.context),
    histories: new Float32Array(geometry.history),
    lastProbs: new Float32Array(1),
    quiet: new Uint8Array(1),
    samples: new Float32Array(SILENCE_WARMUP_WINDOWS * VAD_WINDOW),
    floorRms: 0,
    rate,
  };
  return (await scoreBatch(loaded, carry, new Float32Array(VAD_STATE))).states;
}

/** Scores a batch; `silence` is the gate's reset state at the batch's rate (silenceState). */
export async function scoreBatch(loaded: LoadedSession, batch: VadBatch, silence: Float32Array, checkpoint?: () => Promise<void>): Promise<VadBatchResult> {
  const { counts, states, contexts, lastProbs, quiet, samples, floorRms } = batch;
  const rate = batch.rate ?? 16000;
  const geometry = vadGeometry(rate);
  const channels = counts.length;
  const maxRows = Math.max(1, batch.maxRows ?? Number.MAX_SAFE_INTEGER);
  const offsets = new Int32Array(channels); // first window of each stream within `samples`
  let total = 0;
  let steps = 0;
  for (let c = 0; c < channels; c++) {
    offsets[c] = total;
    total += counts[c]!;
    steps = Math.max(steps, counts[c]!);
  }
  if (samples.length !== total * VAD_WINDOW) throw new RangeError(`scoreBatch: ${samples.length} samples for ${total} windows`);
  const histories = batch.histories ?? new Float32Array(0);
  if (states.length !== channels * VAD_STATE || contexts.length !== channels * geometry.context || histories.length !== channels * geometry.history) {
    throw new RangeError(`scoreBatch: carry size mismatch for ${channels} streams at ${rate} Hz`);
  }
  const modelSamples = rate === 8000 ? decimateStreams(samples, counts, offsets, histories) : samples;
  const probabilities = new Float32Array(total);
  const sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(rate)]), []);
  const run: RowRun = { loaded, sr, geometry, states, contexts, lastProbs, modelSamples, offsets, probabilities };
  let modelWindows = 0;
  let gatedWindows = 0;
  const rows: number[] = [];
  for (let k = 0; k < steps; k++) {
    rows.length = 0;
    for (let c = 0; c < channels; c++) {
      if (k >= counts[c]!) continue;
      // The gate measures the 16 kHz input, so −60 dBFS means the same at either rate.
      const isQuiet = floorRms > 0 && rms(samples, (offsets[c]! + k) * VAD_WINDOW) < floorRms;
      if (isQuiet && quiet[c] && lastProbs[c]! < GATE_MAX_PREVIOUS) {
        probabilities[offsets[c]! + k] = 0;
        states.set(silence, c * VAD_STATE);
        contexts.fill(0, c * geometry.context, (c + 1) * geometry.context);
        // The decimator's history is not reset: it is the signal, not the model's memory.
        lastProbs[c] = 0;
        gatedWindows++;
      } else {
        rows.push(c);
      }
      quiet[c] = isQuiet ? 1 : 0;
    }
    for (let from = 0; from < rows.length; from += maxRows) {
      await runRows(run, k, rows.slice(from, from + maxRows));
      modelWindows += Math.min(maxRows, rows.length - from);
    }
    if (checkpoint && k % 8 === 7) await checkpoint();
  }
  return { states, contexts, ...(batch.histories ? { histories } : {}), lastProbs, quiet, probabilities, modelWindows, gatedWindows };
}

/** Each stream's windows of this job at 8 kHz, stream-major like `samples`; updates `histories`. */
function decimateStreams(samples: Float32Array, counts: Int32Array, offsets: Int32Array, histories: Float32Array): Float32Array {
  const out = new Float32Array(samples.length / 2);
  for (let c = 0; c < counts.length; c++) {
    const from = offsets[c]! * VAD_WINDOW;
    decimateHalfBand(
      samples.subarray(from, from + counts[c]! * VAD_WINDOW),
      histories.subarray(c * HALF_BAND_HISTORY, (c + 1) * HALF_BAND_HISTORY),
      out,
      from / 2,
    );
  }
  return out;
}

/** What every model run of one job shares. */
interface RowRun {
  loaded: LoadedSession;
  sr: InstanceType<typeof ort.Tensor>;
  geometry: VadGeometry;
  states: Float32Array;
  contexts: Float32Array;
  lastProbs: Float32Array;
  /** The job's windows at the model's rate, stream-major. */
  modelSamples: Float32Array;
  offsets: Int32Array;
  probabilities: Float32Array;
}

/** One model run over window k of the streams in `rows`; writes their probabilities and carries back. */
async function runRows(run: RowRun, k: number, rows: number[]): Promise<void> {
  const { states, contexts, lastProbs, modelSamples, offsets, probabilities } = run;
  const { window, context } = run.geometry;
  const width = context + window;
  const b = rows.length;
  const input = new Float32Array(b * width);
  const state = new Float32Array(2 * b * HIDDEN);
  for (let r = 0; r < b; r++) {
    const c = rows[r]!;
    const at = (offsets[c]! + k) * window;
    input.set(contexts.subarray(c * context, (c + 1) * context), r * width);
    input.set(modelSamples.subarray(at, at + window), r * width + context);
    for (let layer = 0; layer < 2; layer++) {
      state.set(states.subarray(c * VAD_STATE + layer * HIDDEN, c * VAD_STATE + (layer + 1) * HIDDEN), (layer * b + r) * HIDDEN);
    }
  }
  const out = await run.loaded.run({
    input: new ort.Tensor('float32', input, [b, width]),
    state: new ort.Tensor('float32', state, [2, b, HIDDEN]),
    sr: run.sr,
  });
  const probs = out.output!.data as Float32Array;
  const next = out.stateN!.data as Float32Array;
  for (let r = 0; r < b; r++) {
    const c = rows[r]!;
    const at = (offsets[c]! + k) * window;
    probabilities[offsets[c]! + k] = probs[r]!;
    lastProbs[c] = probs[r]!;
    // This window's tail is the next window's context.
    contexts.set(modelSamples.subarray(at + window - context, at + window), c * context);
    for (let layer = 0; layer < 2; layer++) {
      states.set(next.subarray((layer * b + r) * HIDDEN, (layer * b + r + 1) * HIDDEN), c * VAD_STATE + layer * HIDDEN);
    }
  }
}

/** The RMS of samples [at, end) (default: one VAD window), for the energy gates here and in the CTC runner. */
export function rms(samples: Float32Array, at: number, end = at + VAD_WINDOW): number {
  let sum = 0;
  for (let i = at; i < end; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / (end - at));
}
