/**
 * The encoder pool's rules, through its public interface (createPooledEncoder + EncoderPool): nothing is
 * left behind when a consumer leaves mid-stream, a new stream's first slices go ahead of other streams'
 * continuations, streams otherwise take turns, the per-stream bound, and a dying worker failing only its
 * own streams and being replaced. Order is asserted with one request in flight, where it is exact.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EncoderBacklogError, EncoderPool } from '../../../../src/codecs/encode-pool/encoder-pool.js';
import { createPooledEncoder } from '../../../../src/codecs/encode-pool/pooled-encoder.js';
import { EncoderThreadError, type SpeechFormat, type StreamingEncoder } from '../../../../src/codecs/types.js';
import { speechLikeSignal } from '../encoders/codec-test-utils.js';

const RATE = 24000;
const SLICE = speechLikeSignal(0.1, RATE);
const CRASH_SAMPLE = Math.fround(0.123456789); // see test/fixtures/crashing-encoder-worker.ts
const CRASHING_WORKER = new URL('../../../fixtures/crashing-encoder-worker.ts', import.meta.url);

const pools: EncoderPool[] = [];
function newPool(options: Partial<ConstructorParameters<typeof EncoderPool>[0]> = {}): EncoderPool {
  const pool = new EncoderPool({ size: 1, ...options });
  pools.push(pool);
  return pool;
}
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

/** An encoder that has already delivered bytes (an Ogg/Opus stream's first push always does). */
async function started(pool: EncoderPool, format: SpeechFormat = 'opus'): Promise<StreamingEncoder> {
  const encoder = await createPooledEncoder(pool, format, { inputRate: RATE });
  expect((await encoder.push(SLICE)).length).toBeGreaterThan(0);
  return encoder;
}

describe('EncoderPool', () => {
  it('frees every stream in the workers when consumers leave mid-stream, even with a push in flight', async () => {
    const pool = newPool({ size: 2 });
    const encoders = await Promise.all((['mp3', 'opus', 'flac', 'mp3'] as const).map((format) => started(pool, format)));
    expect(pool.stats().streams).toBe(4);
    expect(await pool.workerEncoders()).toBe(4);
    const inFlight = encoders[0]!.push(SLICE);
    for (const encoder of encoders) encoder.close();
    // Cancellation, not an error: the push that was under way resolves with nothing.
    expect((await inFlight).length).toBe(0);
    await expect(encoders[1]!.push(SLICE)).rejects.toThrow(/closed/);
    expect(pool.stats()).toMatchObject({ streams: 0, waiting: 0, inFlight: 0 });
    expect(await pool.workerEncoders()).toBe(0);
  });

  it("puts a new stream's first slice ahead of other streams' queued continuations", async () => {
    const pool = newPool({ inFlightPerWorker: 1 });
    const busy = await Promise.all([started(pool), started(pool), started(pool)]);
    const fresh = await createPooledEncoder(pool, 'opus', { inputRate: RATE });
    const order: string[] = [];
    const all: Array<Promise<unknown>> = [];
    for (const [s, encoder] of busy.entries()) for (let i = 0; i < 3; i++) all.push(encoder.push(SLICE).then(() => order.push(`busy${s}`)));
    all.push(fresh.push(SLICE).then(() => order.push('fresh')));
    await Promise.all(all);
    // One continuation was already in flight when the fresh stream's slice arrived; it went next.
    expect(order.indexOf('fresh')).toBe(1);
    expect(order).toHaveLength(10);
  });

  it('serves streams round-robin, one request per turn, each stream in its own order', async () => {
    const pool = newPool({ inFlightPerWorker: 1 });
    const [a, b] = await Promise.all([started(pool), started(pool)]);
    const order: string[] = [];
    const all: Array<Promise<unknown>> = [];
    for (let i = 1; i <= 4; i++) all.push(a!.push(SLICE).then(() => order.push(`a${i}`)));
    for (let i = 1; i <= 4; i++) all.push(b!.push(SLICE).then(() => order.push(`b${i}`)));
    await Promise.all(all);
    // a1 went out at once (the worker was idle); from then on the two streams alternate.
    expect(order).toEqual(['a1', 'a2', 'b1', 'a3', 'b2', 'a4', 'b3', 'b4']);
  });

  it('refuses a push beyond the per-stream bound and keeps the stream going', async () => {
    const pool = newPool({ inFlightPerWorker: 1, maxPendingPerStream: 2 });
    const encoder = await started(pool);
    const accepted = [encoder.push(SLICE), encoder.push(SLICE), encoder.push(SLICE)];
    await expect(encoder.push(SLICE)).rejects.toBeInstanceOf(EncoderBacklogError);
    for (const bytes of await Promise.all(accepted)) expect(bytes.length).toBeGreaterThan(0);
    expect((await encoder.flush()).length).toBeGreaterThan(0);
  });

  it('fails only the streams of a worker that dies, and replaces the worker', async () => {
    const pool = newPool({ size: 2, workerUrl: CRASHING_WORKER });
    // Pinned to the least loaded worker: doomed and sibling share one, survivor has the other.
    const doomed = await started(pool, 'mp3');
    const survivor = await started(pool, 'mp3');
    const sibling = await started(pool, 'mp3');
    const poison = SLICE.slice();
    poison[0] = CRASH_SAMPLE;
    await expect(doomed.push(poison)).rejects.toBeInstanceOf(EncoderThreadError);
    await expect(doomed.push(SLICE)).rejects.toThrow(/after end: an earlier call failed/);
    await expect(sibling.push(SLICE)).rejects.toBeInstanceOf(EncoderThreadError);
    expect((await survivor.push(SLICE)).length).toBeGreaterThan(0);
    expect((await survivor.flush()).length).toBeGreaterThan(0);
    expect(pool.stats().workers).toBe(2);
    const next = await started(pool, 'mp3');
    expect((await next.flush()).length).toBeGreaterThan(0);
    expect(pool.stats().streams).toBe(0);
  });

  it('fails open streams when the pool closes, and refuses new ones', async () => {
    const pool = newPool();
    const encoder = await started(pool, 'flac');
    await pool.close();
    await expect(encoder.push(SLICE)).rejects.toBeInstanceOf(EncoderThreadError);
    await expect(createPooledEncoder(pool, 'flac', { inputRate: RATE })).rejects.toBeInstanceOf(EncoderThreadError);
  });

  it('rejects a bad input rate like the in-thread encoder, before any round trip', async () => {
    const pool = newPool();
    await expect(createPooledEncoder(pool, 'mp3', { inputRate: 12.5 })).rejects.toBeInstanceOf(RangeError);
    expect(pool.stats().workers).toBe(0);
  });
});
