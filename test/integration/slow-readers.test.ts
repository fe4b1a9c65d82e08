/**
 * Slow readers of speech (issue 16): a client that stops reading holds no model replica — another
 * request's audio arrives, whole, while it is paused, on a model with one replica — and once it has read
 * nothing for KUMA_STREAM_STALL_TIMEOUT_MS its response is cut and it is charged the characters whose
 * audio reached its socket, no more (checked against the bytes it received), and the hold is released.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/test-server.js';
import { startTestServerWithModels } from '../helpers/models-test-server.js';
import { openSlowReader } from '../helpers/slow-reader.js';
import { planPhrases } from '../../src/engines/tts/phrase-plan.js';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { SLICE_SECONDS_MAX } from '../../src/voice/phrase-encoder.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-slow-readers-'));
const STALL_MS = 3000;
const SENTENCE = 'n bɛ taa sugu la sini, an bɛ malo san. ';
// ≈ 190 phrases, 17 min of audio, ≈ 50 MB of 24 kHz pcm: far more than loopback socket buffers hold.
const LONG = SENTENCE.repeat(190).trim();
const MODEL = 'djelia-tts-v2'; // no input limit (jifili-1 takes 1000 characters)

let t: TestServer;
beforeAll(async () => {
  t = await startTestServerWithModels(
    // One replica: a reader that held it would make every other request wait for the stall timeout.
    [{ id: '{vendor}-tts-v2', engine: 'custom', replicas: 1, options: { module: 'scripted-tts.ts', progressFile: path.join(dir, 'progress.log') } }],
    // A legacy id (no input limit) is served until its retirement date: pin the clock before it.
    { config: { streamStallTimeoutMs: STALL_MS }, clock: () => new Date('2026-09-01T00:00:00Z') },
  );
}, 120_000);
afterAll(async () => {
  await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const speechBody = (input: string) => JSON.stringify({ model: MODEL, input, response_format: 'pcm' });
const openReader = (apiKey: string) =>
  openSlowReader(t.server.port, '/openai/v1/audio/speech', { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, speechBody(LONG), 1);

/** Characters delivered when the first `covered` samples (16 kHz, the fixture's rate) are out, phrase by phrase. */
function charactersAt(covered: number): number {
  let start = 0;
  let characters = 0;
  for (const phrase of planPhrases(LONG, null)) {
    const length = speakDemo(phrase.text, 16000).samples.length;
    if (start + length <= covered) characters += phrase.characters;
    else if (covered > start) return characters + Math.floor((phrase.characters * (covered - start)) / length);
    else return characters;
    start += length;
  }
  return characters;
}

describe('slow speech readers', () => {
  it('a paused reader holds no replica: another request is served whole meanwhile, and the stall cut charges what reached the socket', async () => {
    const slow = await t.newAccount(100_000_000);
    const reader = await openReader(slow.apiKey);
    expect(reader.status).toBe(200);

    // The model has one replica: this only completes if the paused reader is not holding it.
    const other = await t.newAccount(10_000_000);
    const res = await fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${other.apiKey}`, 'content-type': 'application/json' },
      body: speechBody('i ni ce. a ka kɛnɛ wa?'),
    });
    expect(res.status).toBe(200);
    const audio = new Uint8Array(await res.arrayBuffer());
    expect(audio.length).toBeGreaterThan(0);
    // Served while the reader was still connected and stalled: its stream has not been cut or settled yet.
    expect(await t.server.store.listUsage({ accountId: slow.accountId })).toHaveLength(0);
    // (Its charge lands once its last bytes were delivered: a moment after the client has them.)
    await expect
      .poll(async () => (await t.server.store.listUsage({ accountId: other.accountId })).map((r) => r.quantity))
      .toEqual([[...'i ni ce. a ka kɛnɛ wa?'].length]);

    // The stalled stream is cut and settled without the client reading anything more.
    await expect
      .poll(async () => (await t.server.store.listUsage({ accountId: slow.accountId })).length, { timeout: STALL_MS + 10_000, interval: 200 })
      .toBe(1);
    await reader.finish();
    const received = reader.body().length;
    const [row] = await t.server.store.listUsage({ accountId: slow.accountId });
    // pcm is 24 kHz s16le, resampled from the fixture's 16 kHz: received input samples = bytes / 2 × 2/3.
    const receivedIn = Math.floor(received / 3);
    // Charged: at most what the bytes received carry; at least that less the last slice (≤ SLICE_SECONDS_MAX)
    // the server may have had in flight when it cut (and the resampler's 10 ms of delay).
    expect(row!.quantity).toBeGreaterThan(0);
    expect(row!.quantity).toBeLessThan([...LONG].length);
    expect(row!.quantity).toBeLessThanOrEqual(charactersAt(receivedIn + 2));
    expect(row!.quantity).toBeGreaterThanOrEqual(charactersAt(receivedIn - Math.round(16_000 * SLICE_SECONDS_MAX) - 160 - 2));
    // The balance paid exactly that, and nothing stays held.
    expect((await t.server.store.getAccount(slow.accountId))!.balanceMicros).toBe(100_000_000 - row!.costMicros);
  }, 60_000);

  it('many paused readers of one account do not stop another account being served', async () => {
    const slow = await t.newAccount(1_000_000_000);
    const readers = await Promise.all(Array.from({ length: 8 }, () => openReader(slow.apiKey)));
    expect(readers.map((r) => r.status)).toEqual(readers.map(() => 200));
    const other = await t.newAccount(10_000_000);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
        method: 'POST',
        headers: { authorization: `Bearer ${other.apiKey}`, 'content-type': 'application/json' },
        body: speechBody('i ni ce'),
      });
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
    for (const r of readers) r.destroy();
  }, 60_000);
});
