/**
 * The `aac` encoder (ADTS AAC-LC 24 kHz mono through a pooled ffmpeg): round trips through two decoders
 * (ffmpeg's and FAAD2 via audio-decode), the exact push-by-push frame schedule, resampling, 1-sample
 * pushes, the state machine, cancellation and ffmpeg failures. Prints first-chunk latency and speed.
 */

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import decodeAudio from 'audio-decode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAacEncoder } from '../../../../src/codecs/encoders/aac.js';
import { AdtsParser, parseAdtsHeader } from '../../../../src/codecs/encoders/adts.js';
import { FfmpegAacPool, resolveFfmpegPath } from '../../../../src/codecs/encoders/ffmpeg-aac-pool.js';
import { resample } from '../../../../src/codecs/resample.js';
import type { StreamingEncoder } from '../../../../src/codecs/types.js';

/** Pearson correlation the decoded audio must reach against the input, once aligned (measured ≈ 0.99). */
const MIN_CORRELATION = 0.9;

/** Speech-like: a gliding 110–190 Hz voice with formant-shaped harmonics, 4 Hz syllables, a little noise. */
function speechLike(seconds: number, rate: number): Float32Array {
  const out = new Float32Array(Math.round(seconds * rate));
  let phase = 0;
  let seed = 12345;
  for (let i = 0; i < out.length; i++) {
    const t = i / rate;
    phase += (2 * Math.PI * (150 + 40 * Math.sin(2 * Math.PI * 0.7 * t))) / rate;
    let v = 0;
    for (let h = 1; h <= 20; h++) {
      const f = h * 150;
      const formants = Math.exp(-(((f - 600) / 300) ** 2)) + 0.6 * Math.exp(-(((f - 1700) / 400) ** 2)) + 0.3 * Math.exp(-(((f - 2600) / 500) ** 2));
      v += (formants / h ** 0.5) * Math.sin(h * phase);
    }
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const syllable = Math.sin(Math.PI * ((t * 4) % 1)) ** 2;
    out[i] = 0.25 * syllable * v + 0.005 * (seed / 0x7fffffff - 0.5);
  }
  return out;
}

/** Best lag of `decoded` against `reference` (decoded[i + lag] ≈ reference[i]) and the correlation there. */
function alignedCorrelation(reference: Float32Array, decoded: Float32Array, maxLag: number): { lag: number; correlation: number } {
  const correlate = (lag: number, from: number, to: number): number => {
    let xy = 0;
    let xx = 0;
    let yy = 0;
    for (let i = Math.max(0, from, -lag); i < Math.min(to, reference.length, decoded.length - lag); i++) {
      const x = reference[i]!;
      const y = decoded[i + lag]!;
      xy += x * y;
      xx += x * x;
      yy += y * y;
    }
    return xy / Math.sqrt(xx * yy || 1);
  };
  let best = { lag: 0, correlation: -2 };
  const mid = reference.length >> 1;
  for (let lag = -maxLag; lag <= maxLag; lag++) {
    const c = correlate(lag, mid - 4000, mid + 4000); // a window is enough to find the lag
    if (c > best.correlation) best = { lag, correlation: c };
  }
  return { lag: best.lag, correlation: correlate(best.lag, 0, reference.length) };
}

/** Decodes with the bundled ffmpeg to s16le at the stream's own rate; returns samples and its stream line. */
function ffmpegDecode(bytes: Uint8Array, inputFormat: string): { samples: Float32Array; stream: string } {
  const result = spawnSync(resolveFfmpegPath(), ['-hide_banner', '-f', inputFormat, '-i', 'pipe:0', '-f', 's16le', '-acodec', 'pcm_s16le', 'pipe:1'], {
    input: bytes,
    maxBuffer: 1 << 26,
  });
  const stderr = result.stderr.toString();
  expect(result.status, stderr).toBe(0);
  expect(stderr).not.toMatch(/error/i);
  const pcm = new Int16Array(result.stdout.buffer, result.stdout.byteOffset, result.stdout.length / 2);
  return { samples: Float32Array.from(pcm, (s) => s / 32768), stream: /Stream #0:0.*Audio: .*/.exec(stderr)?.[0] ?? '' };
}

async function encodeInPieces(encoder: StreamingEncoder, signal: Float32Array, piece: number): Promise<{ chunks: Uint8Array[]; bytes: Uint8Array }> {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < signal.length; i += piece) chunks.push(await encoder.push(signal.subarray(i, i + piece)));
  chunks.push(await encoder.flush());
  return { chunks, bytes: Buffer.concat(chunks) };
}

function countFrames(bytes: Uint8Array): number {
  return new AdtsParser().push(bytes).length;
}

let pool: FfmpegAacPool;
beforeAll(async () => {
  pool = new FfmpegAacPool({ size: 2 });
  await pool.ready();
});
afterAll(async () => {
  await pool.close();
});

describe('createAacEncoder', () => {
  it('encodes 1.5 s in 20 ms pushes to ADTS that ffmpeg and FAAD2 decode back faithfully', async () => {
    const signal = speechLike(1.5, 24000);
    const encoder = await createAacEncoder({ inputRate: 24000 }, { pool });
    expect(encoder.info).toMatchObject({ format: 'aac', mediaType: 'audio/aac', sampleRate: 24000, lossless: false });
    const { chunks, bytes } = await encodeInPieces(encoder, signal, 480);

    // First bytes on the push that crosses 2048 samples (the 5th: 2400), never later.
    expect(chunks.findIndex((c) => c.length > 0)).toBe(4);
    expect(countFrames(bytes)).toBe(Math.ceil((signal.length + 1024) / 1024));
    expect(parseAdtsHeader(bytes)).toMatchObject({ objectType: 2, sampleRate: 24000, channels: 1 });

    const viaFfmpeg = ffmpegDecode(bytes, 'aac');
    expect(viaFfmpeg.stream).toMatch(/aac \(LC\).*24000 Hz, mono/);
    // Priming (1024) + audio + padding to a whole frame: within one frame of input + priming.
    expect(Math.abs(viaFfmpeg.samples.length - (signal.length + 1024))).toBeLessThanOrEqual(1024);
    const a = alignedCorrelation(signal, viaFfmpeg.samples, 2500);
    expect(a.lag).toBe(1024); // ADTS cannot signal the priming, so decoders play it
    expect(a.correlation).toBeGreaterThan(MIN_CORRELATION);

    // FAAD2 assumes implicit SBR for a 24 kHz AAC-LC stream and outputs 48 kHz; bring it back to compare.
    const faad = await decodeAudio(bytes);
    expect(faad.channelData).toHaveLength(1);
    const faadAt24k = faad.sampleRate === 24000 ? faad.channelData[0]! : await resample(faad.channelData[0]!, faad.sampleRate, 24000);
    expect(Math.abs(faadAt24k.length - signal.length)).toBeLessThanOrEqual(2048);
    const b = alignedCorrelation(signal, faadAt24k, 2500);
    expect(b.correlation).toBeGreaterThan(MIN_CORRELATION);
    console.log(
      `[aac] correlation after alignment: ffmpeg ${a.correlation.toFixed(4)} (lag ${a.lag}), FAAD2 ${b.correlation.toFixed(4)} (lag ${b.lag}, decoded at ${faad.sampleRate} Hz)`,
    );
  });

  it('returns every frame as soon as ffmpeg can make it: floor(n / 1024) − 1 after n ≥ 2048 samples', async () => {
    const signal = speechLike(0.8, 24000);
    for (const piece of [480, 1000, 1024, 4096]) {
      // The 100 ms idle timeout would hand back fewer frames when ffmpeg gets no CPU for that long (a CI run
      // under the parallel suite once did): the schedule itself is what this test checks.
      const encoder = await createAacEncoder({ inputRate: 24000 }, { pool, idleTimeoutMs: 10_000 });
      let pushed = 0;
      let frames = 0;
      for (let i = 0; i < signal.length; i += piece) {
        const bytes = await encoder.push(signal.subarray(i, i + piece));
        pushed += Math.min(piece, signal.length - i);
        frames += countFrames(bytes);
        expect(frames, `piece ${piece}, after ${pushed} samples`).toBe(Math.max(0, Math.floor(pushed / 1024) - 1));
      }
      frames += countFrames(await encoder.flush());
      expect(frames).toBe(Math.ceil((signal.length + 1024) / 1024));
    }
  });

  it('works with 1-sample pushes', async () => {
    const signal = speechLike(0.2, 24000);
    const encoder = await createAacEncoder({ inputRate: 24000 }, { pool });
    const { chunks, bytes } = await encodeInPieces(encoder, signal, 1);
    expect(chunks.findIndex((c) => c.length > 0)).toBe(2047); // the 2048th sample completes frame 1
    const decoded = ffmpegDecode(bytes, 'aac').samples;
    expect(alignedCorrelation(signal, decoded, 2500).correlation).toBeGreaterThan(MIN_CORRELATION);
  });

  it('resamples other input rates to 24 kHz', async () => {
    const encoder = await createAacEncoder({ inputRate: 16000 }, { pool });
    const { bytes } = await encodeInPieces(encoder, speechLike(1.5, 16000), 320);
    const decoded = ffmpegDecode(bytes, 'aac');
    expect(decoded.stream).toMatch(/24000 Hz, mono/);
    const reference = speechLike(1.5, 24000);
    expect(Math.abs(decoded.samples.length - (reference.length + 1024))).toBeLessThanOrEqual(1024);
    expect(alignedCorrelation(reference, decoded.samples, 2500).correlation).toBeGreaterThan(MIN_CORRELATION);
  });

  it('enforces the stream lifecycle; close() mid-stream kills ffmpeg and ends an in-flight push quietly', async () => {
    const before = pool.pids().inUse;
    const encoder = await createAacEncoder({ inputRate: 24000 }, { pool });
    await expect(encoder.push([0.1] as unknown as Float32Array)).rejects.toThrow(TypeError);
    await encoder.push(speechLike(0.2, 24000)); // a wrong argument does not end the stream
    const pid = pool.pids().inUse.find((id) => !before.includes(id));
    expect(pid).toBeDefined();
    const inFlight = encoder.push(speechLike(0.2, 24000));
    encoder.close();
    encoder.close();
    await expect(inFlight).resolves.toEqual(new Uint8Array(0));
    await expect(encoder.push(new Float32Array(10))).rejects.toThrow(/closed/);
    await expect(encoder.flush()).rejects.toThrow(/closed/);
    await expect.poll(() => pool.pids().inUse.includes(pid!)).toBe(false);
    expect(() => process.kill(pid!, 0)).toThrow();

    const flushed = await createAacEncoder({ inputRate: 24000 }, { pool });
    expect(await flushed.flush()).toEqual(new Uint8Array(0)); // no audio, no bytes
    await expect(flushed.push(new Float32Array(10))).rejects.toThrow(/already flushed/);
    await expect(flushed.flush()).rejects.toThrow(/already flushed/);
    flushed.close();
  });

  it('rejects with a clear error when ffmpeg dies, exits non-zero or cannot start', async () => {
    const before = pool.pids().inUse;
    const killed = await createAacEncoder({ inputRate: 24000 }, { pool });
    await killed.push(speechLike(0.1, 24000));
    process.kill(
      pool.pids().inUse.find((pid) => !before.includes(pid))!,
      'SIGKILL',
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(killed.push(speechLike(0.1, 24000))).rejects.toThrow(/aac encoder: ffmpeg was killed by SIGKILL/);

    const dir = mkdtempSync(join(tmpdir(), 'kuma-aac-'));
    const failing = join(dir, 'ffmpeg');
    // A stand-in that fails once it reads input (the pre-roll, or the stream's first samples).
    writeFileSync(failing, '#!/bin/sh\nhead -c 1 > /dev/null\necho "Unknown encoder aac" >&2\nexit 3\n');
    chmodSync(failing, 0o755);
    const badPool = new FfmpegAacPool({ size: 0, ffmpegPath: failing });
    try {
      const encoder = await createAacEncoder({ inputRate: 24000 }, { pool: badPool });
      const encoding = (async () => {
        await encoder.push(new Float32Array(4800));
        await encoder.flush();
      })();
      await expect(encoding).rejects.toThrow(/ffmpeg exited with code 3: Unknown encoder aac/);
      const missing = new FfmpegAacPool({ size: 0, ffmpegPath: join(dir, 'missing') });
      await expect(createAacEncoder({ inputRate: 24000 }, { pool: missing })).rejects.toThrow(/cannot start ffmpeg/);
      await missing.close();
    } finally {
      await badPool.close();
    }
    await expect(createAacEncoder({ inputRate: 0 }, { pool })).rejects.toThrow(RangeError);
  });

  it('reports first-chunk latency with a warm pool and encode speed (figures only: bench:tts measures them)', async () => {
    const latencies: number[] = [];
    for (let run = 0; run < 7; run++) {
      await pool.ready();
      const signal = speechLike(0.3, 24000);
      const t0 = performance.now();
      const encoder = await createAacEncoder({ inputRate: 24000 }, { pool });
      for (let i = 0; i < signal.length; i += 480) {
        if ((await encoder.push(signal.subarray(i, i + 480))).length > 0) break;
      }
      latencies.push(performance.now() - t0);
      encoder.close();
    }
    latencies.sort((x, y) => x - y);
    const median = latencies[3]!;

    const long = speechLike(20, 24000);
    const t0 = performance.now();
    const encoder = await createAacEncoder({ inputRate: 24000 }, { pool });
    const { bytes } = await encodeInPieces(encoder, long, 480);
    const speed = 20 / ((performance.now() - t0) / 1000);
    expect(countFrames(bytes)).toBe(Math.ceil((long.length + 1024) / 1024));
    console.log(
      `[aac] first bytes after create + 20 ms pushes (5 pushes = 2400 samples): min ${latencies[0]!.toFixed(1)} / median ${median.toFixed(1)} / max ${latencies[6]!.toFixed(1)} ms; ` +
        `encode speed in 20 ms pushes: ×${speed.toFixed(0)} real time (${((bytes.length * 8) / 20 / 1000).toFixed(1)} kbit/s)`,
    );
  });
});
