/**
 * DecoderPool's child processes, as the server sees them:
 * - a file that exhausts a child's memory fails alone with a 400-mapped AudioDecodeError; another upload
 *   being decoded by the same child fails with DecoderRestartedError (503, retry: nothing was wrong with
 *   it); a fresh child serves what comes next; this process's memory does not follow the child's;
 * - a child killed from outside (a crash) fails its running job and is replaced;
 * - the wait queue is served in turn across accounts: an account queuing many uploads does not make
 *   another account's upload wait for all of them (an ordering, no timing).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecoderPool } from '../../../src/codecs/decode/decoder-pool.js';
import { residentBytes } from '../../../src/codecs/decode/decoder-process.js';
import { toApiError } from '../../../src/api/errors.js';
import { AudioDecodeError, DecoderRestartedError } from '../../../src/codecs/types.js';
import { memoryBombM4a } from '../../helpers/memory-bomb.js';
import { encodeWithFfmpeg } from './helpers/ffmpeg.js';
import { speechLike } from './helpers/signals.js';

let bomb: Uint8Array;
let longAdts: Uint8Array; // 2 minutes of ADTS
let short: Uint8Array; // 1 s

beforeAll(async () => {
  const second = await encodeWithFfmpeg([speechLike(16000, 1)], 16000, ['-c:a', 'aac', '-f', 'adts'], 'aac');
  longAdts = new Uint8Array(second.length * 120);
  for (let i = 0; i < 120; i++) longAdts.set(second, i * second.length);
  short = second;
  bomb = new Uint8Array(await memoryBombM4a());
}, 60_000);

const second = { targetRate: 16000, windowSamples: 16000 };
const childPids = (pool: DecoderPool) => (pool as unknown as { slots: Set<{ child: { pid?: number } }> }).slots;

describe('DecoderPool: a child that dies fails only its own jobs', () => {
  const pool = new DecoderPool({ size: 1, streamsPerWorker: 4, memoryMb: 256 });
  afterAll(() => pool.close());

  it('the upload exhausting memory gets a 400-mapped error, its neighbour a 503 to retry, the next a fresh child', async () => {
    const neighbour = await pool.open(longAdts.slice(), second);
    await expect.poll(() => neighbour.buffered).toBe(2); // paused on the same child, waiting for its reader
    const ownBefore = residentBytes(process.pid)!;
    const culprit = await pool
      .open(bomb.slice(), second)
      .then(
        async (stream) => {
          for await (const _window of stream) void _window;
          return null;
        },
        (error: unknown) => error,
      )
      .catch((error: unknown) => error);
    expect(culprit).toBeInstanceOf(AudioDecodeError);
    expect(culprit).toMatchObject({ kind: 'corrupt', message: expect.stringMatching(/memory/) });
    expect(toApiError(culprit)).toMatchObject({ status: 400, code: 'invalid_value', param: 'file' });
    expect(residentBytes(process.pid)! - ownBefore).toBeLessThan(200 * 1024 * 1024);

    const windows: number[] = [];
    const neighbourError = await (async () => {
      for await (const window of neighbour) windows.push(window.length);
    })().catch((error: unknown) => error);
    expect(windows.length).toBe(2); // what was already decoded still arrives, then the failure
    expect(neighbourError).toBeInstanceOf(DecoderRestartedError);
    expect(toApiError(neighbourError)).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });

    const next = await pool.decode(short.slice(), { targetRate: 16000 });
    expect(next.durationSeconds).toBeGreaterThan(0.9);
  }, 60_000);

  it('a child killed from outside fails the job it was decoding and is replaced', async () => {
    const stream = await pool.open(longAdts.slice(), { targetRate: 16000, windowSamples: 16000 * 200 });
    const [slot] = childPids(pool);
    process.kill(slot!.child.pid!, 'SIGKILL');
    const error = await (async () => {
      for await (const _window of stream) void _window;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AudioDecodeError);
    expect(toApiError(error)).toMatchObject({ status: 400, param: 'file' });
    expect((await pool.decode(short.slice(), { targetRate: 16000 })).durationSeconds).toBeGreaterThan(0.9);
  }, 60_000);
});

describe('DecoderPool: the wait queue is served in turn across accounts', () => {
  it("account B's one upload starts right after the first of account A's eight queued ones, not after all of them", async () => {
    const pool = new DecoderPool({ size: 1, streamsPerWorker: 1 });
    try {
      const holding = await pool.open(longAdts.slice(), second, undefined, 'A'); // takes the only place
      const started: string[] = [];
      const run = (account: string, name: string) =>
        pool.open(short.slice(), { targetRate: 16000 }, undefined, account).then(async (stream) => {
          started.push(name);
          for await (const _window of stream) void _window;
        });
      const jobs = [...Array.from({ length: 8 }, (_, i) => run('A', `A${i}`)), run('B', 'B0')];
      expect(pool.stats().queued).toBe(9);
      holding.close();
      await Promise.all(jobs);
      expect(started.indexOf('B0')).toBe(1);
      expect(started.filter((n) => n.startsWith('A'))).toEqual(Array.from({ length: 8 }, (_, i) => `A${i}`));
    } finally {
      await pool.close();
    }
  }, 60_000);
});
