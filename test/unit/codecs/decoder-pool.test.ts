/**
 * DecoderPool: decoding happens in worker threads (the event loop keeps ticking), results equal the
 * in-thread decoder's, AudioDecodeError crosses the thread boundary intact, buffers are transferred,
 * jobs beyond the pool size queue, an overrunning job fails with 'timeout' and its worker is replaced,
 * and close() settles everything.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio } from '../../../src/codecs/decode/decode-audio.js';
import { DecoderPool } from '../../../src/codecs/decode/decoder-pool.js';
import { AudioDecodeError } from '../../../src/codecs/types.js';
import { encodeWithFfmpeg } from './helpers/ffmpeg.js';
import { speechLike, stereoSpeechLike } from './helpers/signals.js';

let opus: Uint8Array; // 1 s stereo Ogg/Opus at 48 kHz
let longAdts: Uint8Array; // 2 minutes of ADTS: long enough to take a few hundred ms to decode

beforeAll(async () => {
  opus = await encodeWithFfmpeg(stereoSpeechLike(48000, 1), 48000, ['-c:a', 'libopus'], 'ogg');
  const second = await encodeWithFfmpeg([speechLike(16000, 1)], 16000, ['-c:a', 'aac', '-f', 'adts'], 'aac');
  longAdts = new Uint8Array(second.length * 120); // ADTS frames simply concatenate
  for (let i = 0; i < 120; i++) longAdts.set(second, i * second.length);
});

describe('DecoderPool', () => {
  const pool = new DecoderPool({ size: 2, timeoutMs: 20_000 });
  afterAll(() => pool.close());

  it('returns exactly what decodeAudio returns in-thread', async () => {
    const inThread = await decodeAudio(opus, { targetRate: 16000 });
    const pooled = await pool.decode(opus.slice(), { targetRate: 16000 });
    expect(pooled).toEqual(inThread);
    expect(pooled.samples).toBeInstanceOf(Float32Array);
  });

  it('rebuilds AudioDecodeError on this side of the thread boundary, kind and message intact', async () => {
    for (const [bytes, kind] of [
      [new Uint8Array(0), 'empty'],
      [new TextEncoder().encode('not audio, just text'), 'unsupported'],
      [opus.slice(0, 60), 'truncated'],
    ] as const) {
      const error = await pool.decode(bytes, { targetRate: 16000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AudioDecodeError);
      expect(error).toMatchObject({ kind, name: 'AudioDecodeError', message: expect.any(String) });
    }
    await expect(pool.decode(opus.slice(), { targetRate: 16000, maxDurationSeconds: 0.5 })).rejects.toMatchObject({ kind: 'too_long' });
  });

  it('passes programming errors (a bad target rate) through as themselves, not as audio errors', async () => {
    const error = await pool.decode(opus.slice(), { targetRate: 3 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeError);
  });

  it('transfers a buffer it owns whole instead of copying it, and copies a view of a larger buffer', async () => {
    const owned = opus.slice();
    const pending = pool.decode(owned, { targetRate: 16000 });
    expect(owned.byteLength).toBe(0); // detached: it moved to the worker
    await pending;
    const big = new Uint8Array(opus.length + 100);
    big.set(opus, 50);
    const view = big.subarray(50, 50 + opus.length);
    await pool.decode(view, { targetRate: 16000 });
    expect(view.byteLength).toBe(opus.length); // the rest of `big` must stay usable
  });

  it('keeps the event loop free while decoding', async () => {
    let worstGap = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      worstGap = Math.max(worstGap, now - last);
      last = now;
    }, 5);
    const t = performance.now();
    const result = await pool.decode(longAdts.slice(), { targetRate: 16000 });
    const elapsed = performance.now() - t;
    clearInterval(ticker);
    expect(result.durationSeconds).toBeGreaterThan(119);
    expect(elapsed).toBeGreaterThan(100); // the work was real…
    expect(worstGap).toBeLessThan(Math.min(100, elapsed / 2)); // …and did not happen on this thread
  });

  it('runs up to `size` jobs at once and queues the rest in order', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => pool.decode(opus.slice(), { targetRate: 8000 + i * 1000 })));
    expect(results.map((r) => r.sampleRate)).toEqual([8000, 9000, 10000, 11000, 12000]);
  });
});

describe('DecoderPool: timeout and close', () => {
  it('fails an overrunning job with timeout, replaces its worker, and keeps serving', async () => {
    const pool = new DecoderPool({ size: 1, timeoutMs: 30 });
    try {
      // Warm the worker up first so that the 30 ms are spent decoding, not loading WASM.
      await pool.decode(opus.slice(), { targetRate: 16000 }).catch(() => undefined);
      const error = await pool.decode(longAdts.slice(), { targetRate: 16000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AudioDecodeError);
      expect(error).toMatchObject({ kind: 'timeout', message: expect.stringContaining('0.03 s') });
      const empty = await pool.decode(new Uint8Array(0), { targetRate: 16000 }).catch((e: unknown) => e);
      expect(empty).toMatchObject({ kind: 'empty' }); // a fresh worker answered
    } finally {
      await pool.close();
    }
  });

  it('close() rejects queued and running jobs, refuses new ones, and can be called twice', async () => {
    const pool = new DecoderPool({ size: 1 });
    const running = pool.decode(longAdts.slice(), { targetRate: 16000 }).catch((e: unknown) => e);
    const queued = pool.decode(opus.slice(), { targetRate: 16000 }).catch((e: unknown) => e);
    await pool.close();
    expect(await running).toMatchObject({ message: expect.stringMatching(/closed/) });
    expect(await queued).toMatchObject({ message: expect.stringMatching(/closed/) });
    await expect(pool.decode(opus.slice(), { targetRate: 16000 })).rejects.toThrow(/closed/);
    await pool.close();
  });
});
