/**
 * Whole-file upload decoding: bytes of any supported container → all of its audio as one mono Float32
 * array at the rate a model wants. It is the stream of decode-stream.ts joined, for callers that need the
 * whole audio at once and know it fits in memory (tests, short clips); the servers' upload path consumes
 * the stream window by window instead (DecoderPool.open).
 *
 * Every failure is an AudioDecodeError: the caller maps it to a 400 (or 413 for too_long) without looking
 * at library errors. This blocks the calling thread while WASM decodes; servers go through DecoderPool.
 */
import type { DecodedAudio } from '../types.js';
import { decodeAudioStream, type DecodeOptions, type DecodeSummary } from './decode-stream.js';

export type { DecodeOptions } from './decode-stream.js';

/** Joins windows into one array. */
export function joinWindows(windows: Float32Array[]): Float32Array {
  if (windows.length === 1) return windows[0]!;
  const out = new Float32Array(windows.reduce((n, w) => n + w.length, 0));
  let at = 0;
  for (const w of windows) {
    out.set(w, at);
    at += w.length;
  }
  return out;
}

/** The summary and windows as the DecodedAudio callers know. */
export function decodedAudio(summary: DecodeSummary, windows: Float32Array[]): DecodedAudio {
  return {
    samples: joinWindows(windows),
    sampleRate: summary.sampleRate,
    durationSeconds: summary.durationSeconds,
    container: summary.container,
    sourceSampleRate: summary.sourceSampleRate,
    sourceChannels: summary.sourceChannels,
  };
}

/**
 * Decodes an upload to mono Float32 at `options.targetRate`. Rejects with AudioDecodeError ('empty',
 * 'unsupported', 'corrupt', 'truncated', 'too_long') for anything wrong with the bytes, and with a
 * RangeError for a nonsensical targetRate (a caller bug).
 */
export async function decodeAudio(bytes: Uint8Array, options: DecodeOptions): Promise<DecodedAudio> {
  const stream = decodeAudioStream(bytes, options);
  const windows: Float32Array[] = [];
  for (;;) {
    const step = await stream.next();
    if (step.done) return decodedAudio(step.value, windows);
    if (step.value.type === 'window') windows.push(step.value.samples);
  }
}
