/**
 * The process-wide encoder pool that createEncoder() uses, and which formats go to it. Sized by
 * configureEncoderPool() (the server passes KUMA_ENCODER_THREADS; 0 keeps every encoder on the calling
 * thread); without a call, it has defaultEncoderThreads() workers, started on first use.
 */
import os from 'node:os';
import type { SpeechFormat } from '../types.js';
import { EncoderPool } from './encoder-pool.js';

/**
 * Formats encoded in the pool: those whose push() of a 0.1 s slice cost the I/O thread more than 300 µs
 * at 16 and 22.05 kHz input (load-tests/RESULTS.md, "codecs — main-thread cost per 0.1 s slice"): mp3
 * ≈ 0.75–0.9 ms, opus ≈ 0.8–1.0 ms, flac ≈ 0.4–0.55 ms. The PCM, WAV and G.711 formats cost 15–230 µs,
 * less than a round trip to a worker would save.
 */
export const POOLED_FORMATS: ReadonlySet<SpeechFormat> = new Set<SpeechFormat>(['mp3', 'opus', 'flac']);

/**
 * Half the cores, 1 to 4: the other half is left to the model replicas and the I/O thread; encoding at
 * ×80 real time per thread, 4 threads keep up with ≈ 300 concurrent real-time streams.
 */
export function defaultEncoderThreads(): number {
  return Math.max(1, Math.min(4, Math.floor(os.availableParallelism() / 2)));
}

let threads: number | undefined;
let pool: EncoderPool | undefined;

/** Sets the pool size for the pools created from now on (0 = no pool); `undefined` = the default. */
export function configureEncoderPool(size: number | undefined): void {
  threads = size;
}

/** The shared pool, or null when encoding runs on the calling thread (size 0). */
export function sharedEncoderPool(): EncoderPool | null {
  const size = threads ?? defaultEncoderThreads();
  if (size <= 0) return null;
  pool ??= new EncoderPool({ size, warmFormats: [...POOLED_FORMATS] });
  return pool;
}

/** Stops the shared pool's workers (server shutdown); streams still open on it fail. The next use starts a new one. */
export async function closeSharedEncoderPool(): Promise<void> {
  const current = pool;
  pool = undefined;
  await current?.close();
}
