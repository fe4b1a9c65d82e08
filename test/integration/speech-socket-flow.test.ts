/**
 * The streaming speech socket's flow control and billing, with the scripted TTS runner (the demo voice,
 * logging each phrase it finishes): a client that disconnects mid-stream stops synthesis and is charged
 * the phrases whose audio it was sent in full; a client that does not read stops synthesis a bounded
 * number of phrases ahead, and gets everything once it reads again; a balance that runs out ends the
 * socket after the phrases already paid for; audio still owed (a phrase slower than the inactivity timeout)
 * is not inactivity.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/test-server.js';
import { startTestServerWithModels } from '../helpers/models-test-server.js';
import { chunkText } from '../../src/engines/tts/text-chunker.js';
import { SpeechSocketClient } from './speech-socket-client.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-speech-socket-'));
const slowLog = path.join(dir, 'slow.log');
const fastLog = path.join(dir, 'fast.log');

let t: TestServer;
beforeAll(async () => {
  t = await startTestServerWithModels(
    [
      { id: 'jifili-1', engine: 'custom', options: { module: 'scripted-tts.ts', progressFile: slowLog, phraseDelayMs: 300 } },
      { id: '{vendor}-tts-v2', engine: 'custom', options: { module: 'scripted-tts.ts', progressFile: fastLog } },
      // A phrase slower than the 1 s inactivity timeout used below (a real-size voice behind a queue).
      { id: '{vendor}-tts-v1', engine: 'custom', options: { module: 'scripted-tts.ts', progressFile: path.join(dir, 'slower.log'), phraseDelayMs: 1800 } },
    ],
    { clock: () => new Date('2026-09-01T00:00:00Z') },
  );
}, 120_000);
afterAll(async () => {
  await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const lines = (file: string, prefix: string) =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith(prefix))
    : [];
const connect = (query: string, apiKey: string) =>
  SpeechSocketClient.open(t.baseUrl, `/openai/v1/audio/speech/stream?${query}`, { authorization: `Bearer ${apiKey}` });

async function usageRows(accountId: string, expected: number) {
  // A phrase is charged once its audio was written out: wait (bounded) for the rows rather than for a time.
  for (let i = 0; i < 100; i++) {
    const rows = await t.server.store.listUsage({ accountId });
    if (rows.length >= expected) return rows.map((r) => r.quantity);
    await new Promise((r) => setTimeout(r, 20));
  }
  return (await t.server.store.listUsage({ accountId })).map((r) => r.quantity);
}

describe('speech socket flow', () => {
  it('a client that disconnects mid-stream stops synthesis and is charged the phrases it was sent in full', async () => {
    fs.rmSync(slowLog, { force: true });
    const account = await t.newAccount(10_000_000);
    const text = 'i ni ce. a ka kɛnɛ wa? n bɛ taa sugu la. an bɛ malo san. i ka kɛnɛ. a bɛ se. ';
    const phrases = chunkText(text);
    expect(phrases.length).toBe(6);
    const client = await connect('output_format=pcm', account.apiKey);
    client.send({ text });
    client.send({ text: '' });
    // The second phrase's audio has begun: the first phrase is wholly sent; the third is being synthesized.
    await client.waitFor((m) => m.alignment?.chars.join('') === `${phrases[1]!.text} `, 'the second phrase');
    client.ws.terminate();
    await client.closed;
    expect(await usageRows(account.accountId, 1)).toEqual([phrases[0]!.characters]);
    // Long enough for every remaining phrase had synthesis gone on (4 × 300 ms): only the two sent were made.
    await new Promise((r) => setTimeout(r, 1500));
    expect(lines(slowLog, 'phrase').map((l) => l.split(' ')[1])).toEqual(['0', '1']);
    expect(lines(slowLog, 'abort').length).toBeGreaterThan(0);
  });

  it('a client that does not read stops synthesis a bounded number of phrases ahead, and gets all of it once it reads', async () => {
    fs.rmSync(fastLog, { force: true });
    const account = await t.newAccount(10_000_000);
    // 12 sentences of 176 characters, ~25 s of audio and ~1.6 MB of base64 PCM each: what the socket buffers
    // (the transport's high-water mark, the kernel's send and receive buffers: a few MB) holds about three.
    const sentence = `${'sugu la bɛ taa, '.repeat(11).trim().slice(0, -1)}. `;
    const text = sentence.repeat(12);
    const phrases = chunkText(text);
    expect(phrases.length).toBeGreaterThanOrEqual(12);
    const client = await connect('output_format=pcm&model=djelia-tts-v2', account.apiKey);
    client.ws.pause();
    client.send({ text });
    client.send({ text: '' });
    // Wait until synthesis has stalled: no new phrase for 2 s (a phrase takes about 1 s here). Unbounded, it
    // would run on to the last phrase.
    let synthesizedWhilePaused = -1;
    for (let still = 0; still < 4;) {
      await new Promise((r) => setTimeout(r, 500));
      const now = lines(fastLog, 'phrase').length;
      still = now === synthesizedWhilePaused ? still + 1 : 0;
      synthesizedWhilePaused = now;
    }
    expect(client.received).toHaveLength(0);
    // Buffered phrases, plus the one being encoded and the one synthesized ahead: well short of the end.
    expect(synthesizedWhilePaused).toBeLessThanOrEqual(phrases.length - 4);
    client.ws.resume();
    await client.waitFor((m) => m.isFinal === true, 'isFinal');
    expect((await client.closed).code).toBe(1000);
    expect(lines(fastLog, 'phrase')).toHaveLength(phrases.length);
    expect(client.alignment('alignment').chars.join('')).toBe(phrases.map((p) => `${p.text} `).join(''));
    // One row per phrase, charged as each was delivered.
    const rows = await usageRows(account.accountId, phrases.length);
    expect(rows.reduce((sum, q) => sum + q, 0)).toBe([...text].length);
    expect(rows).toHaveLength(phrases.length);
  }, 120_000);

  it('a balance that cannot pay the next phrase: insufficient_quota, the phrases paid for are spoken, then isFinal and close 1008', async () => {
    const text = 'i ni ce. a ka kɛnɛ wa? n bɛ taa sugu la. ';
    const phrases = chunkText(text);
    // 15 micros per character: enough for the first phrase only.
    const account = await t.newAccount(15 * (phrases[0]!.characters + 2));
    const client = await connect('output_format=pcm&model=djelia-tts-v2', account.apiKey);
    client.send({ text });
    client.send({ text: 'more text that is never spoken ' });
    expect((await client.closed).code).toBe(1008);
    expect(client.errors.map((e) => [e.error, e.code])).toEqual([['insufficient_quota', 1008]]);
    expect(client.received.at(-1)!.json).toEqual({ isFinal: true });
    expect(client.alignment('alignment').chars.join('')).toBe(`${phrases[0]!.text} `);
    expect(await usageRows(account.accountId, 1)).toEqual([phrases[0]!.characters]);
  });

  it('a phrase slower than the inactivity timeout is waited for; once its audio is out, the timeout counts again', async () => {
    const account = await t.newAccount(10_000_000);
    const ended = await connect('output_format=pcm&model=djelia-tts-v1&inactivity_timeout=1', account.apiKey);
    ended.send({ text: 'i ni ce. ' });
    ended.send({ text: '' });
    expect((await ended.closed).code).toBe(1000);
    expect(ended.errors).toEqual([]);
    expect(ended.received.at(-1)!.json).toEqual({ isFinal: true });

    // Input not ended: the phrase's 1.8 s synthesis is no inactivity; the silence after its audio is.
    const open = await connect('output_format=pcm&model=djelia-tts-v1&inactivity_timeout=1', account.apiKey);
    open.send({ text: 'i ni ce. a ka kɛnɛ wa? ' });
    await open.waitFor((m) => m.audio, 'the first phrase');
    expect((await open.closed).code).toBe(1008);
    expect(open.errors.map((e) => e.error)).toEqual(['input_timeout_exceeded']);
    expect(open.alignment('alignment').chars.join('')).toBe('i ni ce. ');
  }, 30_000);
});
