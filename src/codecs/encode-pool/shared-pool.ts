/**
 * Which formats go to the encoder worker pool, how many threads it has by default, and a process-wide pool of
 * that size for code outside a server (tests, benches), started on first use. A server builds its own pool
 * from KUMA_ENCODER_THREADS (encoders/speech-encoders.ts) and never uses this one.
 */
import os from 'node:os';
import type { SpeechFormat } from '../types.js';
import { EncoderPool } from './encoder-pool.js';

/**
 * Formats encoded in the pool: every one but the ffmpeg-backed aac/fmp4 (whose encoding already runs in
 * ffmpeg processes). mp3 (≈ 0.75–0.9 ms per 0.1 s slice on the I/O thread), opus (≈ 0.8–1.0 ms) and flac
 * (≈ 0.4–0.55 ms) are costly per slice (load-tests/RESULTS.md, "codecs — main-thread cost per 0.1 s
 * slice"). The PCM, WAV and G.711 formats cost 15–230 µs per slice, mostly resampling to their rate, which
 * looked too little to move; but at 50 concurrent pcm clients (bench:tts) that per-sample work made the I/O
 * thread the bottleneck (20% of its time in the resampler, TTFB p99 594 ms); pooled, TTFB p99 was 145–200 ms
 * and throughput 46 → 56–69 req/s in the same conditions. Slices grow after the first (speech-stream.ts),
 * so the round trips per stream are few.
 */
export const POOLED_FORMATS: ReadonlySet<SpeechFormat> = new Set<SpeechFormat>([
  'mp3',
  'opus',
  'flac',
  'pcm',
  'wav',
  'wav_8k',
  'ulaw',
  'ulaw_8k',
  'alaw',
  'l16_8000',
  'l16_16000',
]);

/**
 * One per core, 1 to 4. Encoder threads are idle unless there is audio to encode, and the model replicas
 * run at a lower priority (niceness 10), so they share the cores rather than reserve them: with half the
 * cores (one thread on 2 cores), bench:tts at 50 mp3 clients was bound by that one thread (13 req/s; 21
 * with two). Encoding at ×80 real time per thread, 4 threads keep up with ≈ 300 concurrent real-time streams.
 */
export function defaultEncoderThreads(): number {
  return Math.max(1, Math.min(4, os.availableParallelism()));
}

let pool: EncoderPool | undefined;

/** The process-wide pool, with defaultEncoderThreads() workers. */
export function sharedEncoderPool(): EncoderPool {
  pool ??= new EncoderPool({ size: defaultEncoderThreads(), warmFormats: [...POOLED_FORMATS] });
  return pool;
}

/** Stops the process-wide pool's workers; streams still open on it fail. The next use starts a new one. */
export async function closeSharedEncoderPool(): Promise<void> {
  const current = pool;
  pool = undefined;
  await current?.close();
}
