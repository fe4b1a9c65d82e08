/** Shared by the encoder benchmarks (slice-cost.ts, encoder-pool.ts): their input and their I/O-thread meter. */
import { speakDemo } from '../../models/generator/demo-voice.js';

/** Demo-voice speech at `rate`, `seconds` long (the voice repeated). */
export function speechAt(rate: number, totalSeconds: number): Float32Array {
  const text = 'i ni ce a ka kɛnɛ wa n bɛ taa sugu la ɔ ɲɔ ŋa ';
  const out = new Float32Array(Math.round(totalSeconds * rate));
  for (let offset = 0; offset < out.length;) {
    const piece = speakDemo(text, rate).samples;
    out.set(piece.subarray(0, Math.min(piece.length, out.length - offset)), offset);
    offset += piece.length;
  }
  return out;
}

/** Event-loop active milliseconds while `work` runs (its idle waits on other threads or processes excluded). */
export async function loopActiveMs(work: () => Promise<void>): Promise<number> {
  const before = performance.eventLoopUtilization();
  await work();
  return performance.eventLoopUtilization(before).active;
}
