/**
 * Clients that leave mid-stream at every offset, for each engine kind (TTS speech bytes, ASR SSE segments,
 * MT SSE chunks), racing the stream's own end — and after each one the next request is served (P6 item 1:
 * one disconnect used to wedge text-to-speech for everyone until restart).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';

// The server runs in its own process, as in production: the interleavings that wedged an engine need the
// client's close to land while the server is between the worker's messages, which one shared event loop
// (client and server in-process) hides.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-races-'));
let server: ServerProcess;
const t = { baseUrl: '', apiKey: '' };
beforeAll(async () => {
  server = await startServerProcess({ KUMA_DB_PATH: path.join(dir, 'kuma.sqlite'), KUMA_TMP_DIR: dir });
  t.baseUrl = server.baseUrl;
  t.apiKey = server.apiKey;
}, 120_000);
afterAll(() => {
  server?.child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

interface Call {
  path: string;
  headers: Record<string, string>;
  body: Buffer | string;
}

/** Sends the request, reads `leaveAfter` bytes of the response (or all of it, if shorter) and disconnects. */
function leaveAfter(call: Call, bytes: number): Promise<number> {
  return new Promise((resolve) => {
    let got = 0;
    const req = http.request(`${t.baseUrl}${call.path}`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}`, ...call.headers } }, (res) => {
      res.on('data', (d: Buffer) => {
        got += d.length;
        if (got >= bytes) req.destroy();
      });
      res.on('end', () => resolve(got));
      res.on('close', () => resolve(got));
    });
    req.on('error', () => resolve(got));
    req.end(call.body);
  });
}

/** The whole response, failing the test if it does not arrive in time (a wedged engine would hang it). */
async function complete(call: Call): Promise<{ status: number; bytes: number }> {
  const res = await fetch(`${t.baseUrl}${call.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, ...call.headers },
    body: call.body,
    signal: AbortSignal.timeout(20_000),
  });
  return { status: res.status, bytes: (await res.arrayBuffer()).byteLength };
}

const TEXT = 'i ni ce a b d e f g i ni ce a b d e f g';
const speech = (format: string): Call => ({
  path: '/openai/v1/audio/speech',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'jifili-1', input: TEXT, response_format: format }),
});

function transcription(): Call {
  const audio = spokenPhrases(['i ni ce', 'a b d e', 'f g i ni ce', 'a b d'], 16000, 0.8);
  const boundary = 'race-boundary';
  const parts = [
    `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nsunjata-1\r\n`,
    `--${boundary}\r\nContent-Disposition: form-data; name="stream"\r\n\r\ntrue\r\n`,
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="speech.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  ];
  return {
    path: '/openai/v1/audio/transcriptions',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: Buffer.concat([Buffer.from(parts.join('')), wavBytes(audio.samples, 16000), Buffer.from(`\r\n--${boundary}--\r\n`)]),
  };
}

const chat = (): Call => ({
  path: '/openai/v1/chat/completions',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    model: 'banjugu-1',
    stream: true,
    messages: [{ role: 'user', content: 'i ni ce. an bɛ taa so. i ni sogoma. aw ni wula.' }],
    djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
  }),
});

/** 20 offsets from the first byte to past the end of a full response. */
function offsets(fullBytes: number): number[] {
  return Array.from({ length: 20 }, (_, i) => Math.max(1, Math.round(((i + 0.5) / 18) * fullBytes)));
}

describe('a client leaving at any offset never wedges an engine', () => {
  it.each(['wav', 'mp3', 'pcm', 'opus'])(
    'text-to-speech (%s): 20 offsets, each followed by a served request',
    async (format) => {
      const full = await complete(speech(format));
      expect(full.status).toBe(200);
      for (const at of offsets(full.bytes)) {
        await leaveAfter(speech(format), at);
        expect(await complete(speech(format)), `after leaving at byte ${at}`).toMatchObject({ status: 200, bytes: full.bytes });
      }
    },
    120_000,
  );

  it('speech to text (SSE): 20 offsets, each followed by a served request', async () => {
    const full = await complete(transcription());
    expect(full.status).toBe(200);
    for (const at of offsets(full.bytes)) {
      await leaveAfter(transcription(), at);
      expect(await complete(transcription()), `after leaving at byte ${at}`).toMatchObject({ status: 200 });
    }
  }, 120_000);

  it('translation (SSE): 20 offsets, each followed by a served request', async () => {
    const full = await complete(chat());
    expect(full.status).toBe(200);
    for (const at of offsets(full.bytes)) {
      await leaveAfter(chat(), at);
      expect(await complete(chat()), `after leaving at byte ${at}`).toMatchObject({ status: 200 });
    }
  }, 120_000);

  it('leaves the server ready', async () => {
    expect((await fetch(`${t.baseUrl}/readyz`)).status).toBe(200);
  });
});
