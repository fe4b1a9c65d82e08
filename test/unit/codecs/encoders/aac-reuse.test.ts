/**
 * Streams back to back on one ffmpeg process (ffmpeg-process.ts): for stream lengths around every frame
 * boundary and random push sizes, each stream that a reused process encodes is the stream a fresh process
 * encodes: as many frames, the same bytes from the third frame on, the same audio decoded — and the pool
 * really reuses (one process for all of them).
 */
import decodeAudio from 'audio-decode';
import { afterAll, describe, expect, it } from 'vitest';
import { createAacEncoder } from '../../../../src/codecs/encoders/aac.js';
import { AdtsParser } from '../../../../src/codecs/encoders/adts.js';
import { FfmpegAacPool } from '../../../../src/codecs/encoders/ffmpeg-aac-pool.js';
import { seededRandom as random } from '../../../helpers/seeded-random.js';

/** Voiced-speech-like test signal: a few harmonics with a wandering pitch and an amplitude envelope. */
function signal(length: number, next: () => number): Float32Array {
  const out = new Float32Array(length);
  let phase = 0;
  const base = 90 + next() * 160;
  for (let i = 0; i < length; i++) {
    const pitch = base * (1 + 0.1 * Math.sin(i / 3000));
    phase += (2 * Math.PI * pitch) / 24000;
    const envelope = 0.5 * (1 - Math.cos((2 * Math.PI * i) / Math.max(length, 1)));
    out[i] = 0.3 * envelope * (Math.sin(phase) + 0.5 * Math.sin(2 * phase) + 0.25 * Math.sin(3 * phase)) + 0.01 * (next() - 0.5);
  }
  return out;
}

/** Decoded reused vs fresh, as a signal-to-difference ratio over the whole stream. */
const MIN_SNR_DB = 25;

async function decode(frames: Uint8Array[]): Promise<Float32Array> {
  const audio = await decodeAudio(Buffer.concat(frames));
  return audio.channelData[0]!;
}

function snrDb(a: Float32Array, b: Float32Array): number {
  let signalEnergy = 0;
  let noiseEnergy = 0;
  for (let i = 0; i < a.length; i++) {
    signalEnergy += b[i]! * b[i]!;
    noiseEnergy += (a[i]! - b[i]!) ** 2;
  }
  if (noiseEnergy === 0) return Infinity;
  return 10 * Math.log10(signalEnergy / noiseEnergy);
}

async function encode(pool: FfmpegAacPool, samples: Float32Array, next: () => number): Promise<Uint8Array[]> {
  const encoder = await createAacEncoder({ inputRate: 24000 }, { pool });
  const parser = new AdtsParser();
  const frames: Uint8Array[] = [];
  for (let at = 0; at < samples.length;) {
    const size = 1 + Math.floor(next() * 6000);
    frames.push(...parser.push(await encoder.push(samples.subarray(at, at + size))));
    at += size;
  }
  frames.push(...parser.push(await encoder.flush()));
  return frames;
}

const pools: FfmpegAacPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
});

describe('AAC streams back to back on one process', () => {
  it('encode exactly as fresh processes do, for lengths around every frame boundary', async () => {
    const reused = new FfmpegAacPool({ size: 0, maxIdle: 1 }); // one process, spawned by the first stream
    const fresh = new FfmpegAacPool({ size: 0 });
    pools.push(reused, fresh);
    const lengths = [1, 500, 1023, 1024, 1025, 2047, 2048, 2049, 3072, 24_000, 48_001];
    const next = random(99);
    for (let i = 0; i < 6; i++) lengths.push(1 + Math.floor(next() * 30_000));
    for (const [index, length] of lengths.entries()) {
      const input = signal(length, random(index));
      const got = await encode(reused, input, random(1000 + index));
      const expected = await encode(fresh, input, random(2000 + index));
      expect(got.length, `stream ${index} (${length} samples): frames`).toBe(Math.ceil(length / 1024) + 1);
      // From the third frame on, byte for byte: the encoder has forgotten the previous stream by then.
      expect(Buffer.concat(got.slice(2)).equals(Buffer.concat(expected.slice(2))), `stream ${index} (${length} samples): frames 3+`).toBe(true);
      // The first two (the silent priming frame and the stream's onset) may be quantised differently after
      // another stream's frames than after silence only; decoded, they must carry the same audio.
      const [a, b] = await Promise.all([decode(got), decode(expected)]);
      expect(a.length).toBe(b.length);
      expect(snrDb(a, b), `stream ${index} (${length} samples): decoded difference`).toBeGreaterThan(MIN_SNR_DB);
    }
    expect(reused.stats()).toMatchObject({ spawned: 1, reused: lengths.length - 1 });
  });

  it('a stream cut off mid-way kills its process instead of handing it on', async () => {
    const pool = new FfmpegAacPool({ size: 1, maxIdle: 1 });
    pools.push(pool);
    await pool.ready();
    const [first] = pool.pids().warm;
    const encoder = await createAacEncoder({ inputRate: 24000 }, { pool });
    await encoder.push(signal(5000, random(5)));
    encoder.close();
    const after = await encode(pool, signal(3000, random(6)), random(7));
    expect(after).toHaveLength(Math.ceil(3000 / 1024) + 1);
    expect(pool.pids().warm).not.toContain(first);
    expect(pool.stats().reused).toBe(0);
  });
});
