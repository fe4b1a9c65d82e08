/**
 * Audio and reference scores for the VAD tests: demo speech, digital silence and low noise at known levels,
 * and what Silero gives for one stream alone (VadStream, window by window) under the energy-gate rule.
 */
import { speakDemo } from '../../../../models/generator/demo-voice.js';
import type { SileroVad, VadStream } from '../../../../src/engines/vad/silero-vad.js';
import { VAD_WINDOW } from '../../../../src/engines/vad/silero-batch.js';
import { GATE_MAX_PREVIOUS, SILENCE_WARMUP_WINDOWS, vadGeometry, type VadRate } from '../../../../src/engines/vad/silero-batch.js';
import { HALF_BAND_HISTORY, decimateHalfBand } from '../../../../src/engines/vad/half-band.js';

export const RATE = 16000;
export const PHRASES = ['i ni ce', 'a ka kɛnɛ wa', 'n bɛ taa sugu la', 'sugu ka di', 'an bɛ taa'];

export type Segment =
  { kind: 'speech'; phrase: number; gainDb: number } | { kind: 'silence'; ms: number } | { kind: 'noise'; ms: number; dbfs: number; seed: number };

export function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), (at += p.length));
  return out;
}

/** Uniform noise with the given RMS level (deterministic per seed). */
export function noise(samples: number, dbfs: number, seed: number): Float32Array {
  const amplitude = 10 ** (dbfs / 20) * Math.sqrt(3); // uniform on [−a, a] has RMS a/√3
  let s = seed % 2147483646 || 1;
  return Float32Array.from({ length: samples }, () => ((s = (s * 48271) % 2147483647) / 2147483647 - 0.5) * 2 * amplitude);
}

export function render(segments: Segment[]): Float32Array {
  return concat(
    segments.map((seg) => {
      if (seg.kind === 'silence') return new Float32Array(Math.round((seg.ms * RATE) / 1000));
      if (seg.kind === 'noise') return noise(Math.round((seg.ms * RATE) / 1000), seg.dbfs, seg.seed);
      const gain = 10 ** (seg.gainDb / 20);
      return speakDemo(PHRASES[seg.phrase % PHRASES.length]!, RATE).samples.map((v) => v * gain);
    }),
  );
}

/** Phrases separated (and surrounded) by `silenceMs` of digital silence, with where each phrase is (ms). */
export function conversation(phrases: string[], silenceMs: number, gainDb = 0) {
  const gain = 10 ** (gainDb / 20);
  const silence = new Float32Array(Math.round((silenceMs * RATE) / 1000));
  const parts: Float32Array[] = [silence];
  const spans: Array<{ startMs: number; endMs: number }> = [];
  let at = silence.length;
  for (const phrase of phrases) {
    const spoken = speakDemo(phrase, RATE);
    spans.push({ startMs: ((at + spoken.symbols[0]!.start * RATE) * 1000) / RATE, endMs: ((at + spoken.symbols.at(-1)!.end * RATE) * 1000) / RATE });
    parts.push(
      spoken.samples.map((v) => v * gain),
      silence,
    );
    at += spoken.samples.length + silence.length;
  }
  return { samples: concat(parts), spans };
}

/**
 * One stream's probabilities as the scheduler must give them: VadStream window by window; with a floor,
 * a window below it after a quiet window the model scored under GATE_MAX_PREVIOUS is 0 and the stream
 * restarts as a fresh stream that has heard SILENCE_WARMUP_WINDOWS windows of digital silence. At 8 kHz
 * the whole audio is decimated once (the filter runs through gated windows: it is the signal, not the
 * model), and the gate still measures the 16 kHz windows.
 */
export async function referenceScores(vad: SileroVad, audio: Float32Array, floorRms: number, rate: VadRate = 16000): Promise<Float32Array> {
  const windows = Math.floor(audio.length / VAD_WINDOW);
  const out = new Float32Array(windows);
  const { window: modelWindow } = vadGeometry(rate);
  const modelAudio = rate === 16000 ? audio : decimated(audio.subarray(0, windows * VAD_WINDOW));
  const afterSilence = async () => {
    const s = vad.stream(undefined, rate);
    await s.push(new Float32Array(SILENCE_WARMUP_WINDOWS * modelWindow));
    return s;
  };
  let stream: VadStream = vad.stream(undefined, rate);
  let previousQuiet = false;
  let previous = 0;
  for (let w = 0; w < windows; w++) {
    const window = audio.subarray(w * VAD_WINDOW, (w + 1) * VAD_WINDOW);
    const quiet = floorRms > 0 && rms(window) < floorRms;
    if (quiet && previousQuiet && previous < GATE_MAX_PREVIOUS) {
      out[w] = 0;
      stream = await afterSilence();
    } else {
      out[w] = (await stream.push(modelAudio.subarray(w * modelWindow, (w + 1) * modelWindow)))[0]!;
    }
    previous = out[w]!;
    previousQuiet = quiet;
  }
  return out;
}

export function rms(window: Float32Array): number {
  let sum = 0;
  for (const v of window) sum += v * v;
  return Math.sqrt(sum / window.length);
}

function decimated(audio: Float32Array): Float32Array {
  const out = new Float32Array(audio.length / 2);
  decimateHalfBand(audio, new Float32Array(HALF_BAND_HISTORY), out);
  return out;
}
