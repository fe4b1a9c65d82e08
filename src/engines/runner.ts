/**
 * What a model runner is, inside a worker thread: loaded from a manifest entry, warmed up once, then
 * called per job. A method returns a value, or an async iterable for streaming results (TTS chunks, ASR
 * segments). Long jobs call `ctx.checkpoint()` between model steps: it yields to the worker's event loop so
 * a cancel message can arrive, and throws once the job is cancelled. A job may also take its input as a
 * stream (`ctx.input`: a long recording arriving window by window).
 */
import type { ModelEntry } from './manifest.js';

export interface RunnerContext {
  signal: AbortSignal;
  checkpoint(): Promise<void>;
  /**
   * The job's streamed input, when the caller streams it (ModelEngine.stream with an input iterable):
   * items in order, read once. Absent for jobs whose input came whole.
   */
  input?: AsyncIterable<unknown>;
}

export interface Runner {
  /** Facts for /readyz and logs (sample rate, vocabulary size, ...). */
  info(): Record<string, unknown>;
  warmup(): Promise<void>;
  call(method: string, input: unknown, ctx: RunnerContext): Promise<unknown> | AsyncIterable<unknown>;
  close(): Promise<void>;
}

export interface RunnerLoadOptions {
  entry: ModelEntry;
  dir: string;
  intraOpThreads: number;
  interOpThreads: number;
}

export type RunnerFactory = (options: RunnerLoadOptions) => Promise<Runner>;

export class UnknownMethodError extends Error {
  constructor(engine: string, method: string) {
    super(`The ${engine} runner has no method ${method}`);
  }
}
