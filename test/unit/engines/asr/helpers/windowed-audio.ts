/**
 * Test audio for the streamed ASR planners: each 512-sample VAD window's first sample is the speech
 * probability a stand-in VAD reports for it (so fast-check can write any speech/silence pattern and the
 * real hysteresis decides the regions); the other samples are the signal, which the stand-in decoder and
 * the cut search read.
 */
import type { AudioView, VadModel } from '../../../../../src/engines/asr/streamed-audio.js';
import { VAD_WINDOW } from '../../../../../src/engines/vad/silero-batch.js';

export const RATE = 16000;

/** A VAD whose probability for a window is the window's first sample, recurrent state and all. */
export const fakeVad: VadModel = {
  stream: () => {
    let pending = new Float32Array(0);
    return {
      async push(samples) {
        const all = new Float32Array(pending.length + samples.length);
        all.set(pending);
        all.set(samples, pending.length);
        const n = Math.floor(all.length / VAD_WINDOW);
        pending = all.slice(n * VAD_WINDOW);
        return Float32Array.from({ length: n }, (_, w) => all[w * VAD_WINDOW]!);
      },
    };
  },
};

/** VAD probabilities of the whole audio, as fakeVad reports them. */
export const probabilitiesOf = (audio: Float32Array): Float32Array =>
  Float32Array.from({ length: Math.floor(audio.length / VAD_WINDOW) }, (_, w) => audio[w * VAD_WINDOW]!);

/** The quietest 20 ms (ties: nearest the middle), reading only samples the view holds (else it throws). */
export function quietest(audio: AudioView, from: number, to: number): number {
  const first = Math.ceil(from * RATE);
  const last = Math.floor(to * RATE);
  if (first < audio.offset || last > audio.offset + audio.samples.length) {
    throw new Error(`samples ${first}…${last} are not all held (held: ${audio.offset}…${audio.offset + audio.samples.length})`);
  }
  let best = (from + to) / 2;
  let bestEnergy = Infinity;
  for (let a = first; a + 320 <= last; a += 320) {
    let energy = 0;
    for (let i = a - audio.offset; i < a - audio.offset + 320; i++) energy += audio.samples[i]! ** 2;
    const t = (a + 160) / RATE;
    if (energy < bestEnergy - 1e-9 || (Math.abs(energy - bestEnergy) <= 1e-9 && Math.abs(t - (from + to) / 2) < Math.abs(best - (from + to) / 2))) {
      bestEnergy = energy;
      best = t;
    }
  }
  return best;
}

/** Length and a hash of an array's sample bits (deep-comparing the arrays themselves is slow). */
export function fingerprint(samples: Float32Array): string {
  const bits = new Uint32Array(samples.buffer, samples.byteOffset, samples.length);
  let h = 0x811c9dc5;
  for (let i = 0; i < bits.length; i++) h = Math.imul(h ^ bits[i]!, 0x01000193) >>> 0;
  return `${samples.length}:${h.toString(16)}`;
}

/** The audio as input windows of the given sizes (cycled), counting how many were read. */
export async function* windows(audio: Float32Array, sizes: number[], pulled?: { count: number }): AsyncGenerator<Float32Array> {
  for (let at = 0, k = 0; at < audio.length; k++) {
    const n = sizes[k % sizes.length]!;
    if (pulled) pulled.count++;
    yield audio.slice(at, at + n);
    at += n;
  }
}

export interface Run {
  /** Speech probability of every VAD window of the run. */
  p: number;
  windows: number;
  /** Signal: words of this many 20 ms frames separated by one quiet frame (0: the signal follows p). */
  word?: number;
}

/** Audio from runs of VAD windows; the signal is `p` with a ripple, or words and pauses where given. */
export function audioOf(runs: Run[], tail: number): Float32Array {
  const total = runs.reduce((n, r) => n + r.windows, 0) * VAD_WINDOW + tail;
  const audio = new Float32Array(total);
  let at = 0;
  for (const run of runs) {
    for (let i = 0; i < run.windows * VAD_WINDOW; i++, at++) {
      const frame = Math.floor(i / 320);
      const signal = run.word ? (frame % (run.word + 1) === run.word ? 0.1 : 0.8) : run.p * (0.5 + 0.5 * Math.sin(at / 7));
      audio[at] = i % VAD_WINDOW === 0 ? run.p : signal;
    }
  }
  return audio;
}
