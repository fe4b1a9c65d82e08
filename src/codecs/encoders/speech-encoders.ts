/**
 * The pools that encode a server's speech, built once by server.ts from its config (as the decoder pool is),
 * handed to every stream that encodes speech — REST speech, the speech sockets, calls — and closed with the
 * server:
 * - the encoder worker threads, for the formats that cost the I/O thread most (POOLED_FORMATS); none with
 *   0 threads, and then every format is encoded on the calling thread;
 * - the ffmpeg processes behind `aac` and `fmp4`, started by the first such stream, so that a server that
 *   never serves AAC never runs ffmpeg.
 *
 * Code outside a server (tests, benches) may give createEncoder() none: it then uses STANDALONE_ENCODERS,
 * the process-wide pools of shared-pool.ts and ffmpeg-aac-pool.ts, created on first use.
 */
import { EncoderPool } from '../encode-pool/encoder-pool.js';
import { POOLED_FORMATS, sharedEncoderPool } from '../encode-pool/shared-pool.js';
import { FfmpegAacPool, sharedAacPool, type FfmpegAacPoolOptions } from './ffmpeg-aac-pool.js';

/** Where a stream's encoder runs: the worker pool (null: none), and the ffmpeg pool (taken only for aac/fmp4). */
export interface EncoderSource {
  readonly pool: EncoderPool | null;
  aac(): FfmpegAacPool;
}

export interface SpeechEncodersOptions {
  /** Encoder worker threads; 0 = every format on the calling thread. */
  threads: number;
  /** The ffmpeg pool: size, most idle, binary, continuation niceness. */
  aac: FfmpegAacPoolOptions;
}

export class SpeechEncoders implements EncoderSource {
  readonly pool: EncoderPool | null;
  private aacPool: FfmpegAacPool | undefined;
  private closed = false;

  constructor(private readonly options: SpeechEncodersOptions) {
    this.pool = options.threads > 0 ? new EncoderPool({ size: options.threads, warmFormats: [...POOLED_FORMATS] }) : null;
  }

  /** Starts the encoder threads now (server start), not on the first mp3/opus/flac stream's path to its first bytes. */
  warm(): void {
    this.pool?.warm();
  }

  /** The ffmpeg pool, started by the first aac or fmp4 stream. */
  aac(): FfmpegAacPool {
    // After close a new pool would outlive the server: a stream that starts this late fails instead.
    if (this.closed) throw new Error('the speech encoders are closed: the server is stopping');
    return (this.aacPool ??= new FfmpegAacPool(this.options.aac));
  }

  /** Stops the encoder threads and the ffmpeg processes; streams still open on them fail. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([this.pool?.close(), this.aacPool?.close()]);
  }
}

/** The process-wide pools, each created on first use: what createEncoder() uses when given no source. */
export const STANDALONE_ENCODERS: EncoderSource = {
  get pool() {
    return sharedEncoderPool();
  },
  aac: sharedAacPool,
};
