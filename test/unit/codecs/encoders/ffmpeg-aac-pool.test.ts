/**
 * The ffmpeg process pool: requests get an already-running process (no spawn on the hot path after
 * warm-up), the pool refills itself, replaces a process killed while idle, backs off from a binary that
 * cannot start, does not keep Node alive while idle, and close() leaves no child process behind.
 */

import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { FfmpegAacPool, resolveFfmpegPath } from '../../../../src/codecs/encoders/ffmpeg-aac-pool.js';
import { isRunning, until } from '../../../helpers/processes.js';
import { loadConfig } from '../../../../src/config/config.js';

const pools: FfmpegAacPool[] = [];
function newPool(options: ConstructorParameters<typeof FfmpegAacPool>[0] = {}): FfmpegAacPool {
  const pool = new FfmpegAacPool(options);
  pools.push(pool);
  return pool;
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

describe('FfmpegAacPool', () => {
  it('hands out warm processes and refills in the background, never spawning on the hot path', async () => {
    const pool = newPool({ size: 2 });
    await pool.ready();
    expect(pool.stats()).toMatchObject({ warm: 2, inUse: 0, spawned: 2, onDemandSpawns: 0 });

    const timings: number[] = [];
    for (let round = 0; round < 5; round++) {
      const warmBefore = pool.pids().warm;
      const spawnedBefore = pool.stats().spawned;
      const t0 = performance.now();
      const proc = pool.acquire();
      timings.push(performance.now() - t0);
      // The process was already running, and acquire() itself started nothing.
      expect(warmBefore).toContain(proc.pid);
      expect(pool.stats().spawned).toBe(spawnedBefore);
      proc.stdin.end();
      expect((await proc.exited).code).toBe(0);
      await until(() => pool.stats().warm === 2);
      await pool.ready(); // the replacement started and initialised (its pid is known from then on)
    }
    expect(pool.stats()).toMatchObject({ onDemandSpawns: 0, spawned: 7, inUse: 0 });
    console.log(`[ffmpeg-aac-pool] acquire() with a warm pool: max ${Math.max(...timings).toFixed(3)} ms`);
  });

  it('spawns on demand when the pool is empty and counts it', async () => {
    const pool = newPool({ size: 1 });
    await pool.ready();
    const a = pool.acquire();
    const b = pool.acquire(); // the refill has not run yet: this one is spawned on the spot
    expect(pool.stats().onDemandSpawns).toBe(1);
    await b.spawned;
    expect(pool.pids().inUse.sort()).toEqual([a.pid, b.pid].sort());
    const noPool = newPool({ size: 0 });
    noPool.acquire().kill();
    expect(noPool.stats()).toMatchObject({ onDemandSpawns: 1, warm: 0 });
  });

  it('replaces a warm process that dies while idle', async () => {
    const pool = newPool({ size: 2 });
    await pool.ready();
    const [victim, survivor] = pool.pids().warm as [number, number];
    process.kill(victim, 'SIGKILL');
    await until(() => pool.stats().replaced === 1 && pool.stats().warm === 2);
    await pool.ready();
    expect(pool.pids().warm).toContain(survivor);
    expect(pool.pids().warm).not.toContain(victim);
    const proc = pool.acquire();
    expect(proc.alive).toBe(true);
    expect(pool.stats().onDemandSpawns).toBe(0);
  });

  it('close() kills warm and in-use processes and leaves no children', async () => {
    const pool = newPool({ size: 3 });
    await pool.ready();
    const busy = pool.acquire();
    busy.stdin.write(Buffer.alloc(4096));
    const pids = [...pool.pids().warm, ...pool.pids().inUse];
    expect(pids).toHaveLength(3);
    await pool.close();
    for (const pid of pids) expect(isRunning(pid), `pid ${pid}`).toBe(false);
    expect(pool.stats()).toMatchObject({ warm: 0, inUse: 0 });
    expect(() => pool.acquire()).toThrow(/closed/);
  });

  it('reports a binary that cannot start, and backs off instead of respawning in a loop', async () => {
    const pool = newPool({ size: 2, ffmpegPath: '/nonexistent/ffmpeg' });
    await expect(pool.acquire().spawned).rejects.toThrow(/cannot start ffmpeg \(\/nonexistent\/ffmpeg\): .*ENOENT/);
    await new Promise((resolve) => setTimeout(resolve, 600));
    // Backoff 0, 0, 100, 200, 400 ms…: a handful of attempts in 0.6 s, not hundreds.
    expect(pool.stats().spawned).toBeLessThan(12);
  });

  it('an idle pool does not keep Node running, and its processes go when Node does', async () => {
    const script = `
      import { FfmpegAacPool } from './src/codecs/encoders/ffmpeg-aac-pool.ts';
      const pool = new FfmpegAacPool({ size: 2 });
      await pool.ready();
      console.log(JSON.stringify(pool.pids().warm));`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd() });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('node did not exit: the idle pool kept it alive')), 10_000);
      child.on('close', (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    expect(code).toBe(0);
    const pids = JSON.parse(stdout.trim()) as number[];
    expect(pids).toHaveLength(2);
    // ffmpeg reads EOF on stdin when its parent is gone, and exits.
    await until(() => pids.every((pid) => !isRunning(pid)));
  });

  it('finds ffmpeg through KUMA_FFMPEG_PATH, else in @ffmpeg-installer', () => {
    expect(resolveFfmpegPath(loadConfig({}).ffmpegPath)).toMatch(/@ffmpeg-installer\/.+\/ffmpeg$/);
    expect(newPool({ size: 0, ffmpegPath: loadConfig({ KUMA_FFMPEG_PATH: '/opt/ffmpeg/bin/ffmpeg' }).ffmpegPath }).ffmpegPath).toBe('/opt/ffmpeg/bin/ffmpeg');
  });
});
