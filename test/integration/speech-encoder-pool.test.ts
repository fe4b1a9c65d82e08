/**
 * Speech in the pooled formats (all but aac/fmp4) through HTTP: a client that leaves mid-stream leaves no
 * encoder behind in the pool's workers, and the next request is served whole. The TTS runner is the
 * scripted demo voice, slowed between phrases so that the client leaves while the stream is under way.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/test-server.js';
import { startTestServerWithModels } from '../helpers/models-test-server.js';
import { JIFILI_FORMATS } from '../../src/api/compat/speech-rules.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-encoder-pool-'));
const LONG = 'n bɛ taa sugu la sini, an bɛ malo san. '.repeat(8).trim();

let t: TestServer;
beforeAll(async () => {
  t = await startTestServerWithModels(
    [
      { id: 'jifili-1', engine: 'custom', options: { module: 'scripted-tts.ts', progressFile: path.join(dir, 'progress.log'), phraseDelayMs: 100 } },
      // A legacy model: the only kind that offers flac, wav_8k and ulaw_8k.
      { id: '{vendor}-tts-v2', engine: 'custom', options: { module: 'scripted-tts.ts', progressFile: path.join(dir, 'progress-v2.log'), phraseDelayMs: 100 } },
    ],
    { clock: () => new Date('2026-09-01T00:00:00Z') },
  );
}, 120_000);
afterAll(async () => {
  await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const speech = (format: string, signal?: AbortSignal) =>
  fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: (JIFILI_FORMATS as readonly string[]).includes(format) ? 'jifili-1' : 'djelia-tts-v2',
      input: LONG,
      response_format: format,
    }),
    signal,
  });

describe('speech through the encoder pool', () => {
  // The pool's stream handling does not depend on the format (byte identity per format is pooled-output.test.ts):
  // the three costly codecs, and one cheap format of each model kind, keep this file short.
  it.each(['mp3', 'opus', 'flac', 'pcm', 'ulaw_8k'] as const)(
    '%s: a client leaving mid-stream frees its encoder; the next request is served',
    async (format) => {
      const pool = t.server.encoders.pool!;
      const controller = new AbortController();
      const res = await speech(format, controller.signal);
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      expect((await reader.read()).value!.length).toBeGreaterThan(0);
      expect(pool.stats().streams).toBe(1); // under way, in the pool
      controller.abort();
      await expect.poll(() => pool.stats().streams, { timeout: 10_000 }).toBe(0);
      expect(await pool.workerEncoders()).toBe(0);

      const full = await speech(format);
      expect(full.status).toBe(200);
      expect((await full.arrayBuffer()).byteLength).toBeGreaterThan(1000);
      expect(pool.stats().streams).toBe(0);
      expect(await pool.workerEncoders()).toBe(0);
    },
    60_000,
  );
});
