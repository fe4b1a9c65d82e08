/**
 * Refusals for lack of capacity are the client's cue to retry, not server failures: a model at capacity
 * refuses a REST request (503 + Retry-After), a speech socket (error, close 1013) and a call's voice, and
 * each is logged at warn — never at error, which is kept for what an operator must fix. The voice model
 * (the scripted TTS, one replica, no queue, 15 s a phrase) is held by one speech socket while the others ask.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/test-server.js';
import { startTestServerWithModels } from '../helpers/models-test-server.js';
import { REALTIME_MODELS } from '../helpers/realtime.js';
import { dialCarrier, mintToken } from '../helpers/telephony.js';
import { SpeechSocketClient } from './speech-socket-client.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-capacity-'));

let t: TestServer;
beforeAll(async () => {
  t = await startTestServerWithModels(
    [
      ...REALTIME_MODELS.filter((m) => m.id === 'sunjata-1' || m.id === 'vad'),
      {
        id: 'jifili-1',
        engine: 'custom',
        replicas: 1,
        maxQueue: 0,
        options: { module: 'scripted-tts.ts', progressFile: path.join(dir, 'tts.log'), phraseDelayMs: 15_000 },
      },
    ],
    { config: { outboundAllow: '127.0.0.1' } },
  );
}, 120_000);
afterAll(async () => {
  await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

interface LogLine {
  level: number;
  msg: string;
  requestId?: string;
  [field: string]: unknown;
}
const logLines = (): LogLine[] => t.logs.map((line) => JSON.parse(line) as LogLine);
const atErrorOrAbove = () => logLines().filter((l) => l.level >= 50);

const speechSocket = () => SpeechSocketClient.open(t.baseUrl, '/openai/v1/audio/speech/stream?output_format=pcm', { authorization: `Bearer ${t.apiKey}` });

/** A speech socket whose first phrase occupies the voice model's only replica (for 15 s). */
async function holdTheVoice(): Promise<SpeechSocketClient> {
  const holder = await speechSocket();
  holder.send({ text: 'i ni ce. ', flush: true });
  await expect.poll(() => t.server.engines!.get('jifili-1')!.refusal(), { timeout: 5000 }).not.toBeNull();
  return holder;
}

describe('capacity refusals are logged at warn, never at error', () => {
  it('REST speech, a speech socket and a call greeting refused by a model at capacity', async () => {
    const holder = await holdTheVoice();

    const rest = await fetch(`${t.baseUrl}/openai/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'jifili-1', input: 'i ni ce.', voice: 'alloy', response_format: 'pcm' }),
    });
    expect(rest.status).toBe(503);
    expect(rest.headers.get('retry-after')).not.toBeNull();
    const restId = rest.headers.get('x-request-id')!;
    await rest.arrayBuffer();

    const refused = await speechSocket();
    refused.send({ text: 'a ka kɛnɛ wa? ', flush: true });
    expect(await refused.closed).toEqual({ code: 1013, reason: 'service_unavailable' });

    const token = await mintToken(t, { mode: 'transcription', welcome_greeting: 'i ni ce.' });
    const call = await dialCarrier(t, 'twilio', { speed: Infinity }, `?token=${token}`);
    await expect.poll(() => logLines().some((l) => /call voice/.test(l.msg)), { timeout: 5000 }).toBe(true);
    call.call.hangup();
    await call.closed;
    holder.ws.close();
    await holder.closed;

    // Each refusal was logged, at warn.
    const restLines = logLines().filter((l) => l.requestId === restId && l.msg !== 'request');
    expect(restLines.map((l) => l.level)).toEqual([40]);
    expect(
      logLines()
        .filter((l) => /speech socket/.test(l.msg))
        .map((l) => l.level),
    ).toEqual([40]);
    expect(
      logLines()
        .filter((l) => /call voice/.test(l.msg))
        .map((l) => l.level),
    ).toEqual([40]);
    expect(atErrorOrAbove()).toEqual([]);
  });
});
