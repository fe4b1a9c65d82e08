/**
 * DecoderPool: decoding happens in child processes (the event loop keeps ticking), results equal the
 * in-thread decoder's (from bytes, or from a spooled upload's file the child reads itself), AudioDecodeError
 * crosses the process boundary intact, views are sent as themselves, warm() starts one process ahead,
 * jobs beyond the pool size queue, an overrunning job fails with 'timeout' and its process is replaced,
 * and close() settles everything. Streams: a decode runs at most `credit` windows ahead of its reader,
 * a reader that is slow does not trip the timeout, leaving mid-stream cancels the decode, failures arrive
 * after the windows before them, a paused stream does not hold up another on the same worker, and a full
 * wait queue is refused at once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio } from '../../../src/codecs/decode/decode-audio.js';
import { DecoderPool } from '../../../src/codecs/decode/decoder-pool.js';
import { AudioDecodeError, DecoderBusyError } from '../../../src/codecs/types.js';
import type { DecodedStream } from '../../../src/codecs/decode/decoded-stream.js';
import { FFMPEG_FORMATS, encodeWithFfmpeg } from './helpers/ffmpeg.js';
import { speechLike, stereoSpeechLike } from './helpers/signals.js';

let opus: Uint8Array; // 1 s stereo Ogg/Opus at 48 kHz
let longAdts: Uint8Array; // 2 minutes of ADTS: long enough to take a few hundred ms to decode
let shortAdts: Uint8Array; // its first 20 s: little decoding work, so a loaded machine stays far inside a timeout

beforeAll(async () => {
  opus = await encodeWithFfmpeg(stereoSpeechLike(48000, 1), 48000, ['-c:a', 'libopus'], 'ogg');
  const second = await encodeWithFfmpeg([speechLike(16000, 1)], 16000, ['-c:a', 'aac', '-f', 'adts'], 'aac');
  longAdts = new Uint8Array(second.length * 120); // ADTS frames simply concatenate
  for (let i = 0; i < 120; i++) longAdts.set(second, i * second.length);
  shortAdts = longAdts.slice(0, second.length * 20);
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

  it('rebuilds AudioDecodeError on this side of the process boundary, kind and message intact', async () => {
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

  it('decodes an upload from the file it was spooled to exactly as from its bytes, reading it in the child', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-pool-file-'));
    try {
      const file = path.join(dir, 'upload');
      writeFileSync(file, opus);
      const fromFile = await pool.open({ path: file, size: opus.length }, { targetRate: 16000 });
      const windows: Float32Array[] = [];
      for await (const window of fromFile) windows.push(window);
      const fromBytes = await pool.decode(opus.slice(), { targetRate: 16000 });
      expect(Float32Array.from(windows.flatMap((w) => Array.from(w)))).toEqual(fromBytes.samples);
      // A file gone before the child read it fails that job only (a server fault, not the client's audio).
      const gone = await pool.open({ path: path.join(dir, 'missing'), size: 10 }, { targetRate: 16000 }).catch((e: unknown) => e);
      expect(gone).toBeInstanceOf(Error);
      expect(gone).not.toBeInstanceOf(AudioDecodeError);
      expect((await pool.decode(opus.slice(), { targetRate: 16000 })).durationSeconds).toBeCloseTo(1, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('warm() starts a decoder process before any upload, and only one', async () => {
    const fresh = new DecoderPool({ size: 2 });
    try {
      expect(fresh.stats().workers).toBe(0);
      fresh.warm();
      fresh.warm();
      expect(fresh.stats().workers).toBe(1);
      // The warm process takes the first upload (more start as every one has work, as before).
      expect((await fresh.decode(opus.slice(), { targetRate: 16000 })).durationSeconds).toBeCloseTo(1, 1);
    } finally {
      await fresh.close();
    }
  });

  it('passes programming errors (a bad target rate) through as themselves, not as audio errors', async () => {
    const error = await pool.decode(opus.slice(), { targetRate: 3 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeError);
  });

  it('sends only the view it is given: a view of a larger buffer decodes as itself and leaves the buffer usable', async () => {
    const big = new Uint8Array(opus.length + 100);
    big.set(opus, 50);
    const view = big.subarray(50, 50 + opus.length);
    const pooled = await pool.decode(view, { targetRate: 16000 });
    expect(pooled).toEqual(await decodeAudio(opus, { targetRate: 16000 }));
    expect(view.byteLength).toBe(opus.length); // the rest of `big` must stay usable
  });

  it('keeps the event loop free while decoding', async () => {
    // The ticker counts turns of the loop while the decode is pending: about one per millisecond while the
    // child works (hundreds for this file), while decodeAudio on this thread lets it turn only between its
    // decoder calls (measured: 9 turns over the same file's 375 ms).
    let ticks = 0;
    const ticker = setInterval(() => void (ticks += 1), 1);
    const result = await pool.decode(longAdts.slice(), { targetRate: 16000 });
    clearInterval(ticker);
    expect(result.durationSeconds).toBeGreaterThan(119);
    expect(ticks).toBeGreaterThanOrEqual(30);
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads a stream to its end or failure: the windows' lengths, and the error if any. */
async function drain(stream: DecodedStream, pauseMs = 0): Promise<{ lengths: number[]; error?: unknown }> {
  const lengths: number[] = [];
  try {
    for await (const window of stream) {
      lengths.push(window.length);
      if (pauseMs) await sleep(pauseMs);
    }
    return { lengths };
  } catch (error) {
    return { lengths, error };
  }
}

describe('DecoderPool: streams of windows', () => {
  const pool = new DecoderPool({ size: 1, timeoutMs: 20_000, credit: 2 });
  afterAll(() => pool.close());
  const second = { targetRate: 16000, windowSamples: 16000 };

  it('gives the header first, then windows that join into what decode() returns', async () => {
    const stream = await pool.open(longAdts.slice(), second);
    expect(stream.header).toEqual({ container: 'adts', label: 'AAC (ADTS)' });
    const windows: Float32Array[] = [];
    for await (const window of stream) windows.push(window);
    const whole = await pool.decode(longAdts.slice(), { targetRate: 16000 });
    expect(stream.summary).toMatchObject({ durationSeconds: whole.durationSeconds, container: 'adts' });
    expect(windows.slice(0, -1).every((w) => w.length === 16000)).toBe(true);
    const joined = new Float32Array(windows.reduce((n, w) => n + w.length, 0));
    windows.reduce((at, w) => (joined.set(w, at), at + w.length), 0);
    expect(joined).toEqual(whole.samples);
    // Two decodes of the long ADTS file through one worker: 11 s in a CI run under the parallel suite.
  }, 60_000);

  it('decodes at most `credit` windows ahead of a reader that does not read', async () => {
    const stream = await pool.open(longAdts.slice(), second);
    await expect.poll(() => stream.buffered).toBe(2);
    await sleep(300); // the worker had time to decode more, had it been allowed to
    expect(stream.buffered).toBe(2);
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    await expect.poll(() => stream.buffered).toBe(2); // one taken, one more decoded
    stream.close();
  });

  it('leaving mid-stream cancels the decode: the worker is free again and serves the next upload', async () => {
    const stream = await pool.open(longAdts.slice(), second);
    for await (const _window of stream) break; // return() closes the stream
    await expect.poll(() => pool.stats().running).toBe(0);
    expect((await pool.decode(opus.slice(), { targetRate: 16000 })).durationSeconds).toBeCloseTo(1, 1);
  });

  it('an aborted signal ends the read with an AbortError and cancels the decode', async () => {
    const controller = new AbortController();
    const stream = await pool.open(longAdts.slice(), second, controller.signal);
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    controller.abort();
    await expect(iterator.next()).rejects.toMatchObject({ name: 'AbortError' });
    await expect.poll(() => pool.stats().running).toBe(0);
  });

  it('a decode failure reaches the reader after the windows decoded before it', async () => {
    const f32 = (await FFMPEG_FORMATS.find((f) => f.name === 'wav f32')!.encode([speechLike(16000, 10)], 16000)).slice();
    f32.fill(0xff, f32.length - 400);
    const { lengths, error } = await drain(await pool.open(f32, second));
    expect(lengths.length).toBeGreaterThanOrEqual(3);
    expect(error).toBeInstanceOf(AudioDecodeError);
    expect(error).toMatchObject({ kind: 'corrupt' });
  });

  it('the duration limit stops a stream that declares none, mid-stream, with too_long', async () => {
    const { lengths, error } = await drain(await pool.open(longAdts.slice(), { ...second, maxDurationSeconds: 30 }));
    expect(lengths.length).toBeGreaterThan(0);
    expect(lengths.length).toBeLessThanOrEqual(30);
    expect(error).toMatchObject({ kind: 'too_long' });
  });
});

describe('DecoderPool: time, sharing and the wait queue', () => {
  it('times the decoding work, not the reader: a reader slower than the timeout still gets everything', async () => {
    // 20 s of audio is ~40 ms of decoding on an idle machine (~130 ms in a fresh child, wasm compile
    // included; measured), so a heavily loaded CI box stays far inside the 4 s budget, while the reader
    // (2 s windows, 400 ms apart) takes over 4 s to read them all.
    const timeoutMs = 4000;
    const pool = new DecoderPool({ size: 1, timeoutMs, credit: 1 });
    try {
      const started = performance.now();
      const { lengths, error } = await drain(await pool.open(shortAdts.slice(), { targetRate: 16000, windowSamples: 16000 * 2 }), 400);
      expect(error).toBeUndefined();
      expect(lengths.length).toBeGreaterThanOrEqual(10); // 20 s (and codec priming) in 2 s windows
      expect(performance.now() - started).toBeGreaterThan(timeoutMs); // the reader really was slower than the budget
    } finally {
      await pool.close();
    }
  });

  it('a stream waiting for its reader does not hold up another upload on the same worker', async () => {
    const pool = new DecoderPool({ size: 1, streamsPerWorker: 4 });
    try {
      const paused = await pool.open(longAdts.slice(), { targetRate: 16000, windowSamples: 16000 });
      await expect.poll(() => paused.buffered).toBe(2);
      expect((await pool.decode(opus.slice(), { targetRate: 16000 })).durationSeconds).toBeCloseTo(1, 1);
      paused.close();
    } finally {
      await pool.close();
    }
  });

  it('refuses at once with DecoderBusyError (and a Retry-After) when every stream is taken and the queue is full', async () => {
    const pool = new DecoderPool({ size: 1, streamsPerWorker: 1, maxQueue: 1 });
    try {
      const holding = await pool.open(longAdts.slice(), { targetRate: 16000, windowSamples: 16000 });
      const waiting = pool.open(opus.slice(), { targetRate: 16000 });
      expect(pool.stats()).toMatchObject({ running: 1, queued: 1 });
      expect(pool.refusal()).toBeInstanceOf(DecoderBusyError);
      const refused = await pool.open(opus.slice(), { targetRate: 16000 }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(DecoderBusyError);
      expect((refused as DecoderBusyError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
      holding.close(); // its place goes to the queued upload
      expect((await drain(await waiting)).error).toBeUndefined();
    } finally {
      await pool.close();
    }
  });
});
