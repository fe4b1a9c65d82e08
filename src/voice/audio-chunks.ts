/**
 * Regroups an encoded speech stream into chunks of a fixed length of audio (the native
 * /v2/models/tts/stream's `chunk_size`), for the constant-byte-rate formats that route serves. Each chunk
 * leaves as soon as its last byte is encoded; the last one may be shorter. How chunks map onto each format:
 * - wav / wav_8k: 16-bit PCM, `chunk_size × rate` samples per chunk; the 44-byte header rides at the front of
 *   the first chunk (which is 44 bytes longer), so every chunk holds exactly chunk_size seconds of audio.
 * - ulaw_8k: one byte per sample, `chunk_size × 8000` bytes per chunk.
 * - mp3: whole frames (576 samples = 24 ms at 24 kHz, 144 bytes at 48 kbps CBR), the nearest whole number of
 *   frames to chunk_size (at least one), so a chunk never splits a frame.
 *
 * The chunker also says how much audio it holds back, so the stream charges only what left (speech-stream.ts).
 */
import { MP3_FRAME_SAMPLES } from '../codecs/formats.js';
import { MP3_BITRATE_KBPS } from '../codecs/encoders/mp3.js';
import { WAV_HEADER_BYTES } from '../codecs/encoders/wav.js';

export type ChunkedFormat = 'mp3' | 'wav' | 'wav_8k' | 'ulaw_8k';

export interface ChunkLayout {
  /** Bytes before the audio (the WAV header), sent with the first chunk. */
  headerBytes: number;
  /** Bytes of audio in every chunk but the last. */
  chunkBytes: number;
  /** Bytes per second of audio. */
  byteRate: number;
}

export function chunkLayout(format: ChunkedFormat, chunkSeconds: number): ChunkLayout {
  switch (format) {
    case 'mp3': {
      const byteRate = (MP3_BITRATE_KBPS * 1000) / 8;
      const frameBytes = (MP3_FRAME_SAMPLES * byteRate) / 24000;
      const frames = Math.max(1, Math.round((chunkSeconds * 24000) / MP3_FRAME_SAMPLES));
      return { headerBytes: 0, chunkBytes: frames * frameBytes, byteRate };
    }
    case 'ulaw_8k':
      return { headerBytes: 0, chunkBytes: Math.max(1, Math.round(chunkSeconds * 8000)), byteRate: 8000 };
    case 'wav':
    case 'wav_8k': {
      const rate = format === 'wav' ? 24000 : 8000;
      return { headerBytes: WAV_HEADER_BYTES, chunkBytes: 2 * Math.max(1, Math.round(chunkSeconds * rate)), byteRate: 2 * rate };
    }
  }
}

/** Bytes in as the encoder makes them; whole chunks out. */
export class AudioChunker {
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  private headerPending: number;

  constructor(private readonly layout: ChunkLayout) {
    this.headerPending = layout.headerBytes;
  }

  append(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.held.push(bytes);
    this.heldBytes += bytes.length;
  }

  /** The next whole chunk, or null until enough bytes have arrived. */
  next(): Uint8Array | null {
    const size = this.headerPending + this.layout.chunkBytes;
    return this.heldBytes >= size ? this.take(size) : null;
  }

  /** What is left once the encoder has flushed: the last, shorter chunk (null if nothing is left). */
  rest(): Uint8Array | null {
    return this.heldBytes > 0 ? this.take(this.heldBytes) : null;
  }

  /** Seconds of audio held back, not yet handed out (the header is not audio). */
  heldSeconds(): number {
    return Math.max(0, this.heldBytes - this.headerPending) / this.layout.byteRate;
  }

  private take(size: number): Uint8Array {
    const all = this.held.length === 1 ? this.held[0]! : Buffer.concat(this.held);
    const out = all.subarray(0, size);
    const left = all.subarray(size);
    this.held = left.length > 0 ? [left] : [];
    this.heldBytes = left.length;
    this.headerPending = 0;
    return out;
  }
}
