/**
 * Silero VAD v5 (MIT; the .onnx ships inside the @ricky0123/vad-web npm package): speech probability per
 * 32 ms window at 16 kHz, and speech regions found with Silero's own hysteresis rules (start above
 * `threshold`, end after `minSilenceMs` below `threshold − 0.15`, drop regions shorter than
 * `minSpeechMs`, pad each side by `speechPadMs`). Runs where onnxruntime may block: inside a worker.
 */
import path from 'node:path';
import { createRequire } from 'node:module';
import { createSession, ort, requireSignature, type LoadedSession, type SessionOptions } from '../onnx/session.js';

export const VAD_SAMPLE_RATE = 16000;
export const VAD_WINDOW = 512;
/** v5 expects the previous window's last 64 samples in front of each window: input [1, 576]. */
const CONTEXT = 64;

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
  private constructor(private readonly loaded: LoadedSession) {}

  static async load(options: SessionOptions, file = defaultSileroFile()): Promise<SileroVad> {
    const loaded = await createSession(file, options);
    requireSignature(loaded, ['input', 'state', 'sr'], ['output', 'stateN']);
    return new SileroVad(loaded);
  }

  /** Speech probability of each full 512-sample window. `checkpoint` is awaited every ~100 windows. */
  async probabilities(samples: Float32Array, checkpoint?: () => Promise<void>): Promise<Float32Array> {
    const windows = Math.floor(samples.length / VAD_WINDOW);
    const probs = new Float32Array(windows);
    let state = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
    const sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(VAD_SAMPLE_RATE)]), []);
    const input = new Float32Array(CONTEXT + VAD_WINDOW);
    for (let w = 0; w < windows; w++) {
      const offset = w * VAD_WINDOW;
      if (w > 0) input.set(samples.subarray(offset - CONTEXT, offset), 0);
      input.set(samples.subarray(offset, offset + VAD_WINDOW), CONTEXT);
      const out = await this.loaded.session.run({ input: new ort.Tensor('float32', input.slice(), [1, CONTEXT + VAD_WINDOW]), state, sr });
      probs[w] = (out.output!.data as Float32Array)[0]!;
      state = out.stateN as typeof state;
      if (checkpoint && w % 100 === 99) await checkpoint();
    }
    return probs;
  }

  async detect(samples: Float32Array, options: Partial<VadOptions> = {}, checkpoint?: () => Promise<void>): Promise<SpeechRegion[]> {
    const probs = await this.probabilities(samples, checkpoint);
    return regionsFromProbabilities(probs, samples.length, { ...DEFAULT_VAD_OPTIONS, ...options });
  }

  async close(): Promise<void> {
    await this.loaded.session.release();
  }
}

/** Silero's hysteresis over window probabilities; pure, so it is unit-tested on made-up sequences. */
export function regionsFromProbabilities(probs: ArrayLike<number>, totalSamples: number, options: VadOptions): SpeechRegion[] {
  const negThreshold = Math.max(options.threshold - 0.15, 0.01);
  const minSilence = (options.minSilenceMs * VAD_SAMPLE_RATE) / 1000;
  const minSpeech = (options.minSpeechMs * VAD_SAMPLE_RATE) / 1000;
  const pad = (options.speechPadMs * VAD_SAMPLE_RATE) / 1000;
  const raw: Array<{ start: number; end: number }> = [];
  let inSpeech = false;
  let start = 0;
  let silenceStart = -1;
  for (let w = 0; w < probs.length; w++) {
    const p = probs[w]!;
    const at = w * VAD_WINDOW;
    if (p >= options.threshold) silenceStart = -1;
    if (!inSpeech && p >= options.threshold) {
      inSpeech = true;
      start = at;
    } else if (inSpeech && p < negThreshold) {
      if (silenceStart < 0) silenceStart = at;
      if (at + VAD_WINDOW - silenceStart >= minSilence) {
        raw.push({ start, end: silenceStart });
        inSpeech = false;
        silenceStart = -1;
      }
    }
  }
  if (inSpeech) raw.push({ start, end: totalSamples });
  const kept = raw.filter((r) => r.end - r.start >= minSpeech);
  // Pad, then merge regions the padding made touch.
  const padded: SpeechRegion[] = [];
  for (const r of kept) {
    const s = Math.max(0, r.start - pad);
    const e = Math.min(totalSamples, r.end + pad);
    const last = padded.at(-1);
    if (last && s <= last.end * VAD_SAMPLE_RATE) last.end = e / VAD_SAMPLE_RATE;
    else padded.push({ start: s / VAD_SAMPLE_RATE, end: e / VAD_SAMPLE_RATE });
  }
  return padded;
}
