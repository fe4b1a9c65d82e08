/**
 * A server encodes speech with pools of its own, built from its config and closed with it, as its decoder
 * is: fmp4 streams go through its ffmpeg pool (KUMA_AAC_POOL_SIZE, KUMA_AAC_POOL_MAX_IDLE,
 * KUMA_AAC_CONTINUATION_NICENESS), mp3 through its encoder threads (KUMA_ENCODER_THREADS), and once the
 * server has closed, none of its ffmpeg processes is left running.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/test-server.js';
import { startTestServerWithModels } from '../helpers/models-test-server.js';
import { isRunning, until } from '../helpers/processes.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-speech-encoders-'));

let t: TestServer;
let closed = false;
beforeAll(async () => {
  t = await startTestServerWithModels(
    [{ id: 'jifili-1', engine: 'custom', options: { module: 'scripted-tts.ts', progressFile: path.join(dir, 'progress.log') } }],
    {
      // No process kept ready: the first fmp4 stream starts the pool's one process, and the second reuses it.
      config: { aacPoolSize: 0, aacPoolMaxIdle: 1, aacContinuationNiceness: 17, encoderThreads: 1 },
    },
  );
}, 120_000);
afterAll(async () => {
  if (!closed) await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const speech = (format: string) =>
  fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'jifili-1', input: 'i ni ce', response_format: format }),
  });

describe("the server's speech encoders", () => {
  it('encode with its configured pools and stop with it', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await speech('fmp4');
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
    const aac = t.server.encoders.aac();
    expect({ size: aac.size, maxIdle: aac.maxIdle, continuationNiceness: aac.continuationNiceness }).toEqual({ size: 0, maxIdle: 1, continuationNiceness: 17 });
    // Both streams ran on this pool: one process, started by the first and handed on to the second.
    await expect.poll(() => aac.stats()).toMatchObject({ spawned: 1, reused: 1 });

    expect((await speech('mp3')).status).toBe(200);
    expect(t.server.encoders.pool!.size).toBe(1);

    const pids = [...aac.pids().warm, ...aac.pids().inUse];
    expect(pids).toHaveLength(1);
    closed = true;
    await t.close();
    await until(() => pids.every((pid) => !isRunning(pid)), 10_000);
    expect(() => t.server.encoders.aac()).toThrow(/closed/);
  }, 60_000);
});
