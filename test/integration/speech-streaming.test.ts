/**
 * The speech pipeline's timing and failure paths, with a scripted TTS runner (the demo voice, slowly, and
 * logging what it does): a long input streams before later text is synthesized; a failure midway ends the
 * body at the point reached; a client that disconnects cancels synthesis within 100 ms; and the ledger
 * charges the characters delivered in each case.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/test-server.js';
import { chargesSettled } from '../helpers/settled.js';
import { startTestServerWithModels } from '../helpers/models-test-server.js';
import { chunkText } from '../../src/engines/tts/text-chunker.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-speech-stream-'));
const slowLog = path.join(dir, 'slow.log');
const failingLog = path.join(dir, 'failing.log');
const onePhraseLog = path.join(dir, 'one-phrase.log');
const SENTENCE = 'n bɛ taa sugu la sini, an bɛ malo san. ';
const LONG = SENTENCE.repeat(20).trim(); // ~780 characters, many phrases
const chunks = chunkText(LONG);

let t: TestServer;
beforeAll(async () => {
  t = await startTestServerWithModels(
    [
      { id: 'jifili-1', engine: 'custom', options: { module: 'scripted-tts.ts', progressFile: slowLog, phraseDelayMs: 150 } },
      { id: '{vendor}-tts-v2', engine: 'custom', options: { module: 'scripted-tts.ts', progressFile: failingLog, failAfterPhrases: 2 } },
      { id: '{vendor}-tts-v1', engine: 'custom', options: { module: 'scripted-tts.ts', progressFile: onePhraseLog, onePhrase: true, holdOpenMs: 60_000 } },
    ],
    { clock: () => new Date('2026-09-01T00:00:00Z') },
  );
}, 120_000);
afterAll(async () => {
  await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const speech = (body: Record<string, unknown>, apiKey: string, signal?: AbortSignal) =>
  fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
const logLines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
const charactersOf = (n: number) => chunks.slice(0, n).reduce((sum, c) => sum + c.characters, 0);

describe('speech streaming', () => {
  it('a long input streams: the first bytes arrive while later text is not yet synthesized', async () => {
    fs.rmSync(slowLog, { force: true });
    const account = await t.newAccount(10_000_000);
    const res = await speech({ input: LONG, response_format: 'pcm' }, account.apiKey);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(first.value!.length).toBeGreaterThan(0);
    const synthesizedAtFirstByte = logLines(slowLog).filter((l) => l.startsWith('phrase')).length;
    expect(chunks.length).toBeGreaterThan(5);
    expect(synthesizedAtFirstByte).toBeLessThan(chunks.length / 2);
    let total = first.value!.length;
    for (let r = await reader.read(); !r.done; r = await reader.read()) total += r.value.length;
    expect(logLines(slowLog).filter((l) => l.startsWith('phrase'))).toHaveLength(chunks.length);
    await chargesSettled(t); // charged once the answer was delivered
    const rows = await t.server.store.listUsage({ accountId: account.accountId });
    expect(rows.map((r) => r.quantity)).toEqual([[...LONG].length]);
    expect(total).toBeGreaterThan(24000); // seconds of audio
  });

  it('a failure midway ends the body at the point reached and charges only what was delivered', async () => {
    const account = await t.newAccount(10_000_000);
    const res = await speech({ model: 'djelia-tts-v2', input: LONG, response_format: 'pcm' }, account.apiKey);
    expect(res.status).toBe(200);
    const bytes = new Uint8Array(await res.arrayBuffer()); // ends cleanly, no hang
    expect(bytes.length).toBeGreaterThan(0);
    await chargesSettled(t); // charged once the answer was delivered
    const rows = await t.server.store.listUsage({ accountId: account.accountId });
    expect(rows.map((r) => [r.model, r.unit, r.quantity])).toEqual([['djelia-tts-v2', 'character', charactersOf(2)]]);
  });

  it('a client that disconnects stops synthesis: a phrase job in flight sees the abort within 100 ms, no phrase starts after; delivered characters are charged', async () => {
    fs.rmSync(slowLog, { force: true });
    const account = await t.newAccount(10_000_000);
    const controller = new AbortController();
    const res = await speech({ input: LONG, response_format: 'pcm' }, account.apiKey, controller.signal);
    const reader = res.body!.getReader();
    // Past the first three slices (0.1 + 0.2 + 0.4 s of 24 kHz pcm): the first slice alone may be charged
    // nothing (a phrase is charged in proportion, rounded down), so read until something must be owed.
    let read = 0;
    while (read < 40_000) read += (await reader.read()).value!.length;
    const disconnectedAt = Date.now();
    controller.abort();
    await expect.poll(async () => (await t.server.store.listUsage({ accountId: account.accountId })).length, { timeout: 5000 }).toBe(1);
    // Phrase jobs: when the client leaves, a job may be running (it is cancelled) or none (synthesis was
    // waiting for the encoder, one phrase ahead). Either way nothing is synthesized afterwards.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const stampOf = (l: string) => Number(l.split(' ').at(-1));
    const abort = logLines(slowLog).find((l) => l.startsWith('abort'));
    if (abort) expect(stampOf(abort) - disconnectedAt).toBeLessThan(100);
    expect(logLines(slowLog).filter((l) => l.startsWith('phrase') && stampOf(l) > disconnectedAt + 100)).toEqual([]);
    const synthesized = logLines(slowLog).filter((l) => l.startsWith('phrase')).length;
    expect(synthesized).toBeLessThan(chunks.length);
    await chargesSettled(t); // charged once the answer was delivered
    const [row] = await t.server.store.listUsage({ accountId: account.accountId });
    // Charged: the characters whose audio was handed to the socket before the client left — something, and
    // no more than the phrases synthesized by then.
    expect(row!.quantity).toBeGreaterThan(0);
    expect(row!.quantity).toBeLessThanOrEqual(charactersOf(synthesized));
  });

  it('mp3: a client that reads ~20 kB and disconnects is charged more than nothing, at most the audio synthesized', async () => {
    fs.rmSync(slowLog, { force: true });
    const account = await t.newAccount(10_000_000);
    const controller = new AbortController();
    const res = await speech({ input: LONG, response_format: 'mp3' }, account.apiKey, controller.signal);
    const reader = res.body!.getReader();
    let read = 0;
    while (read < 20_000) read += (await reader.read()).value!.length;
    controller.abort();
    await expect.poll(async () => (await t.server.store.listUsage({ accountId: account.accountId })).length, { timeout: 5000 }).toBe(1);
    const [row] = await t.server.store.listUsage({ accountId: account.accountId });
    const synthesized = logLines(slowLog).filter((l) => l.startsWith('phrase')).length;
    expect(row!.quantity).toBeGreaterThan(0);
    expect(row!.quantity).toBeLessThanOrEqual(charactersOf(synthesized));
    expect(row!.quantity).toBeLessThan([...LONG].length);
  });

  it('a client that leaves mid-phrase under backpressure pays that phrase in proportion, not nothing', async () => {
    // One phrase of ≈ 230 s (11 MB of pcm): far more than the socket buffers hold, so the server is still
    // inside the phrase, waiting to write, when the client leaves after 20 kB.
    const input = `${LONG} ${LONG}`;
    const account = await t.newAccount(10_000_000);
    const controller = new AbortController();
    const res = await speech({ model: 'djelia-tts-v1', input, response_format: 'pcm' }, account.apiKey, controller.signal);
    const reader = res.body!.getReader();
    let read = 0;
    while (read < 20_000) read += (await reader.read()).value!.length;
    controller.abort();
    await expect.poll(async () => (await t.server.store.listUsage({ accountId: account.accountId })).length, { timeout: 10_000 }).toBe(1);
    const [row] = await t.server.store.listUsage({ accountId: account.accountId });
    expect(row!.quantity).toBeGreaterThan(0);
    expect(row!.quantity).toBeLessThan([...input].length);
    expect((await t.server.store.getAccount(account.accountId))!.balanceMicros).toBe(10_000_000 - row!.costMicros);
  }, 30_000);
});
