/**
 * The `aac` speech format (ADTS AAC-LC, mono 24 kHz, audio/aac) and the engine the `fmp4` format shares:
 * PCM goes to a warm ffmpeg process from the pool, ADTS frames come back on its stdout.
 *
 * push() is deterministic for callers and tests: after writing, it waits until ffmpeg has emitted every
 * frame the input so far allows — floor(n / 1024) − 1 frames after n ≥ 2048 samples (one frame of
 * priming, one of lookahead; see ffmpeg-process.ts for the arguments that make this exact) — which takes
 * about a millisecond. The wait is bounded: after IDLE_TIMEOUT_MS without output push() returns what it has
 * and lowers its expectation (a different ffmpeg build may hold more back), so a slow or foreign ffmpeg
 * delays bytes to the next call but never stalls a stream.
 *
 * Decoders see 1024 samples of priming before the audio (ADTS cannot say to skip them) and up to one
 * frame of padding after it.
 */

import { once } from 'node:events';
import { formatInfo } from '../formats.js';
import { createResampler, type StreamingResampler } from '../resample.js';
import type { EncoderOptions, FormatInfo, StreamingEncoder } from '../types.js';
import { concatBytes, validateInputRate } from './encoder-lifecycle.js';
import { floatToInt16, int16ToLeBytes } from './pcm.js';
import { sharedAacPool, type FfmpegAacPool } from './ffmpeg-aac-pool.js';
import type { FfmpegProcess } from './ffmpeg-process.js';

const FRAME = 1024;
/** Give up waiting for a due frame after this long without any output from ffmpeg. */
const IDLE_TIMEOUT_MS = 100;
/** How long a push waits for a process that is still initialising before the idle timeout applies. */
const WARM_UP_TIMEOUT_MS = 2000;
/** Frames a foreign ffmpeg may hold back before we stop waiting for them at all. */
const MAX_LAG_FRAMES = 4;
/** ffmpeg gives each frame within milliseconds of its input; this long without one, it is wedged and gets killed. */
const FLUSH_TIMEOUT_MS = 10_000;
const EMPTY = new Uint8Array(0);

export interface AacEncoderDeps {
  /** Defaults to the process-wide pool. */
  pool?: FfmpegAacPool;
  /**
   * How long push() waits without output for a due frame (default IDLE_TIMEOUT_MS). Tests of the exact frame
   * schedule raise it, so that a machine too loaded to run ffmpeg for 100 ms does not look like a foreign ffmpeg.
   */
  idleTimeoutMs?: number;
}

/** Turns the ADTS frames a call produced into the bytes it returns; called once per push and once at the end. */
export type AdtsMuxer = (frames: Uint8Array[], final: boolean) => Uint8Array;

export async function createAacEncoder(options: EncoderOptions, deps: AacEncoderDeps = {}): Promise<StreamingEncoder> {
  return createAdtsEncoder(formatInfo('aac'), options, (frames) => concatBytes(frames), deps);
}

/** The shared engine: resampling, the ffmpeg process, the state machine; `mux` decides the container. */
export async function createAdtsEncoder(info: FormatInfo, options: EncoderOptions, mux: AdtsMuxer, deps: AacEncoderDeps = {}): Promise<StreamingEncoder> {
  const inputRate = validateInputRate(options);
  const resampler = inputRate === info.sampleRate ? undefined : await createResampler(inputRate, info.sampleRate);
  const pool = deps.pool ?? sharedAacPool();
  let proc: FfmpegProcess | undefined;
  try {
    proc = pool.acquire();
    await proc.spawned;
  } catch (error) {
    proc?.kill();
    resampler?.close();
    throw error instanceof Error ? error : new Error(String(error));
  }
  return new FfmpegAdtsEncoder(info, pool, proc, resampler, mux, deps.idleTimeoutMs ?? IDLE_TIMEOUT_MS);
}

type State = 'open' | 'flushed' | 'closed' | 'failed';

class FfmpegAdtsEncoder implements StreamingEncoder {
  private state: State = 'open';
  private ready: Uint8Array[] = [];
  private framesReceived = 0;
  private samplesWritten = 0;
  private lag = 0;
  private deprioritized = false;
  private exited = false;
  private endedByUs = false;
  private wake: (() => void) | undefined;
  /** Operations run one after another even if a caller does not await. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly info: FormatInfo,
    private readonly pool: FfmpegAacPool,
    private readonly proc: FfmpegProcess,
    private readonly resampler: StreamingResampler | undefined,
    private readonly mux: AdtsMuxer,
    private readonly idleTimeoutMs: number,
  ) {
    proc.beginStream((frames) => {
      this.ready.push(...frames);
      this.framesReceived += frames.length;
      this.wake?.();
    });
    void proc.exited.then(() => {
      this.exited = true;
      this.wake?.();
    });
  }

  push(samples: Float32Array): Promise<Uint8Array> {
    // A caller's mistake, not a codec failure: reject this call and leave the stream usable.
    if (!(samples instanceof Float32Array)) return Promise.reject(new TypeError(`${this.info.format} encoder: push() takes a Float32Array`));
    return this.enqueue('push', async () => {
      const pcm = this.resampler && samples.length > 0 ? this.resampler.process(samples) : samples;
      await this.write(pcm);
      await this.awaitDueFrames();
      const bytes = this.take(false);
      if (bytes.length > 0 && !this.deprioritized) {
        this.deprioritized = true;
        this.proc.deprioritize(this.pool.continuationNiceness);
      }
      return bytes;
    });
  }

  flush(): Promise<Uint8Array> {
    const result = this.enqueue('flush', async () => {
      if (this.resampler) await this.write(this.resampler.flush());
      this.endedByUs = true;
      if (this.samplesWritten === 0) {
        // No audio at all: no frames (ending the stream would still yield its silent priming frame).
        return this.mux([], true);
      }
      // The process goes on to serve another stream (ffmpeg-process.ts, "Streams back to back").
      const ended = await this.proc.endStream(FLUSH_TIMEOUT_MS);
      if (this.isClosed()) return EMPTY;
      if (!ended) {
        this.proc.kill();
        throw this.proc.alive
          ? new Error(`${this.info.format} encoder: ffmpeg gave no frame for ${FLUSH_TIMEOUT_MS} ms at the end of the stream`)
          : this.processError(this.proc.exitCode, this.proc.signalCode);
      }
      this.reusable = true;
      return this.take(true);
    });
    this.state = 'flushed';
    void result.then(
      () => this.release(),
      () => {},
    );
    return result;
  }

  close(): void {
    if (this.isClosed()) return;
    this.state = 'closed';
    this.release();
    this.wake?.();
  }

  private enqueue(operation: 'push' | 'flush', work: () => Promise<Uint8Array>): Promise<Uint8Array> {
    if (this.state !== 'open') {
      const why = this.state === 'flushed' ? 'the stream was already flushed' : this.isClosed() ? 'the encoder was closed' : 'an earlier call failed';
      return Promise.reject(new Error(`${this.info.format} encoder: ${operation}() after end: ${why}`));
    }
    const run = async (): Promise<Uint8Array> => {
      // close() while this call was queued or running: cancellation, not an error, and nothing more to give.
      if (this.isClosed()) return EMPTY;
      try {
        const bytes = await work();
        return this.isClosed() ? EMPTY : bytes;
      } catch (error) {
        if (this.isClosed()) return EMPTY;
        this.state = 'failed';
        this.release();
        throw error;
      }
    };
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => {});
    return result;
  }

  /** s16le to ffmpeg's stdin, waiting for the pipe to drain when it is full. */
  private async write(samples: Float32Array): Promise<void> {
    if (samples.length === 0) return;
    this.assertRunning();
    // The quantizer every 16-bit encoder shares (clamps, NaN → silence).
    const bytes = int16ToLeBytes(floatToInt16(samples));
    this.samplesWritten += samples.length;
    if (this.proc.write(bytes)) return;
    const drained = await Promise.race([
      once(this.proc.stdin, 'drain').then(
        () => true,
        () => false,
      ),
      this.proc.exited.then(() => false),
    ]);
    if (drained) return;
    // EPIPE or exit: the process is gone (or going); report how it ended rather than the pipe error.
    await this.exitWithin(FLUSH_TIMEOUT_MS);
    this.assertRunning();
  }

  private async awaitDueFrames(): Promise<void> {
    const ideal = Math.max(0, Math.floor(this.samplesWritten / FRAME) - 1);
    if (this.framesReceived < ideal && !this.proc.isWarmed) {
      // A process taken while still starting up emits nothing until ffmpeg has initialised (tens of ms, more
      // on a loaded machine): that silence is not the idle stall the timeout below is for.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.proc.warmed, new Promise((resolve) => (timer = setTimeout(resolve, WARM_UP_TIMEOUT_MS)))]);
      clearTimeout(timer);
    }
    while (this.framesReceived < ideal - this.lag) {
      this.assertRunning();
      const progressed = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), this.idleTimeoutMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
      });
      this.wake = undefined;
      if (this.isClosed()) return;
      if (!progressed) {
        this.lag = Math.min(MAX_LAG_FRAMES, ideal - this.framesReceived);
        return;
      }
    }
    this.assertRunning();
    // Caught up with the ideal: the earlier lag was a slow moment, not a property of this ffmpeg.
    if (this.framesReceived >= ideal) this.lag = 0;
  }

  private async exitWithin(ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.proc.kill();
        reject(new Error(`${this.info.format} encoder: ffmpeg did not finish within ${ms} ms of the end of input`));
      }, ms);
    });
    try {
      return await Promise.race([this.proc.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private take(final: boolean): Uint8Array {
    const frames = this.ready;
    this.ready = [];
    return this.mux(frames, final);
  }

  /** The process must still be running while the stream is open: anything else is a failure. */
  private assertRunning(): void {
    if (this.isClosed() || this.endedByUs) return;
    if (this.exited || !this.proc.alive) throw this.processError(this.proc.exitCode, this.proc.signalCode);
  }

  private processError(code: number | null, signal: NodeJS.Signals | null): Error {
    if (this.proc.spawnError) return this.proc.spawnError;
    const how = signal ? `was killed by ${signal}` : `exited with code ${String(code)}`;
    const stderr = this.proc.stderrTail();
    return new Error(`${this.info.format} encoder: ffmpeg ${how}${stderr ? `: ${stderr}` : ''}`);
  }

  /** A method, not a field test, so TypeScript does not narrow `state` across the awaits close() can interleave with. */
  private isClosed(): boolean {
    return this.state === 'closed';
  }

  private released = false;
  /** Set once the stream ended cleanly: the process can then serve another stream. */
  private reusable = false;
  private release(): void {
    if (this.released) return;
    this.released = true;
    if (this.reusable) this.pool.release(this.proc);
    else this.proc.kill();
    this.resampler?.close();
  }
}
