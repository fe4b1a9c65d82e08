/**
 * POST /v2/models/tts/stream: the audio leaves in chunks of chunk_size seconds of audio. The chunks are read
 * off the wire as the server framed them (HTTP/1.1 chunked transfer coding, one transfer chunk per audio
 * chunk), so their sizes are checked against each format's byte rate: wav/wav_8k carry the 44-byte header
 * in the first chunk, ulaw_8k is one byte per sample, mp3 is whole 144-byte frames. The concatenation of
 * every stream decodes. A client that leaves mid-stream is charged only for the audio it was sent.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/test-server.js';
import { chargesSettled } from '../../helpers/settled.js';
import { startNativeServer } from './sdk-axios.js';
import { decodeSpeech, transcribeWith } from '../../helpers/speech-audio.js';

const TEXT = 'i ni ce a ka kɛnɛ';
const LONG = 'n bɛ taa sugu la sini, an bɛ malo san. '.repeat(12).trim();

let t: TestServer;
beforeAll(async () => {
  t = await startNativeServer();
}, 120_000);
afterAll(() => t.close());

/** Sends a JSON POST over a raw socket and returns the status, Content-Type and the body's transfer chunks. */
function streamChunks(path: string, body: unknown, apiKey = t.apiKey): Promise<{ status: number; contentType: string; chunks: Buffer[] }> {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const socket = net.connect(t.server.port, '127.0.0.1');
    const parts: Buffer[] = [];
    socket.on('data', (d: Buffer) => parts.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(parts);
      const end = raw.indexOf('\r\n\r\n');
      const head = raw.subarray(0, end).toString('latin1');
      const chunks: Buffer[] = [];
      for (let at = end + 4; at < raw.length;) {
        const lineEnd = raw.indexOf('\r\n', at);
        const size = parseInt(raw.subarray(at, lineEnd).toString('latin1'), 16);
        if (!size) break;
        chunks.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
      resolve({ status: Number(head.split(' ')[1]), contentType: /content-type: *([^\r]*)/i.exec(head)?.[1] ?? '', chunks });
    });
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${payload.length}\r\nConnection: close\r\n\r\n`,
    );
    socket.write(payload);
  });
}

const MP3_FRAME_BYTES = 144; // 576 samples at 24 kHz, 48 kbps CBR

describe('chunk_size', () => {
  it.each([
    ['wav', 0.5, 44, 2 * 12000],
    ['wav', 0.1, 44, 2 * 2400],
    ['wav_8k', 0.25, 44, 2 * 2000],
    ['ulaw_8k', 0.2, 0, 1600],
    ['ulaw_8k', 2.0, 0, 16000],
  ])(
    '%s with chunk_size %f: every chunk holds chunk_size seconds of audio (the first also the header), the last no more',
    async (format, chunk_size, header, bytes) => {
      const { status, chunks } = await streamChunks('/api/v2/models/tts/stream', { text: LONG, description: 'Moussa', format, chunk_size });
      expect(status).toBe(200);
      expect(chunks.length).toBeGreaterThan(1);
      expect(chunks[0]!.length).toBe(header + bytes);
      for (const chunk of chunks.slice(1, -1)) expect(chunk.length).toBe(bytes);
      expect(chunks.at(-1)!.length).toBeGreaterThan(0);
      expect(chunks.at(-1)!.length).toBeLessThanOrEqual(chunks.length === 1 ? header + bytes : bytes);
      if (header) expect(chunks[0]!.subarray(0, 4).toString()).toBe('RIFF');
      const { samples, rate } = await decodeSpeech(format === 'ulaw_8k' ? 'ulaw' : 'wav', Buffer.concat(chunks));
      expect(samples.length / rate).toBeGreaterThan(2 * chunk_size * 0.99);
    },
  );

  it.each([0.1, 1.0, 2.0])('mp3 with chunk_size %f: whole frames, the nearest count to chunk_size, each chunk starting on a frame', async (chunk_size) => {
    const { status, contentType, chunks } = await streamChunks('/v2/models/tts/stream', { text: LONG, description: 'Seydou', chunk_size });
    expect([status, contentType]).toEqual([200, 'audio/mpeg']);
    const frames = Math.max(1, Math.round((chunk_size * 24000) / 576));
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.length).toBe(frames * MP3_FRAME_BYTES);
    for (const chunk of chunks) expect([chunk[0], chunk[1]! & 0xe0]).toEqual([0xff, 0xe0]); // an MPEG frame sync
    const { samples, rate } = await decodeSpeech('mp3', Buffer.concat(chunks));
    // Every frame decodes: the audio is as long as the frames sent (LAME's priming included).
    const sent = (Buffer.concat(chunks).length / MP3_FRAME_BYTES) * 576;
    expect(Math.abs(samples.length - sent * (rate / 24000))).toBeLessThan(rate * 0.1);
  });

  it('the chunks of a short text transcribe back to the text', async () => {
    const { chunks } = await streamChunks('/v2/models/tts/stream', { text: TEXT, description: 'Moussa', format: 'wav', chunk_size: 0.5 });
    const { samples, rate } = await decodeSpeech('wav', Buffer.concat(chunks));
    expect(await transcribeWith(t.server.engines!, samples, rate)).toBe(TEXT);
  });
});

describe('billing', () => {
  it('a client that leaves after the first chunk is charged something, less than the whole text', async () => {
    const account = await t.newAccount(10_000_000);
    const controller = new AbortController();
    const res = await fetch(`${t.baseUrl}/v2/models/tts/stream`, {
      method: 'POST',
      headers: { 'x-api-key': account.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ text: LONG, description: 'Moussa', format: 'wav', chunk_size: 0.5 }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    let read = 0;
    while (read < 44 + 24_000) read += (await reader.read()).value!.length;
    controller.abort();
    await expect.poll(async () => (await t.server.store.listUsage({ accountId: account.accountId })).length, { timeout: 10_000 }).toBe(1);
    const [row] = await t.server.store.listUsage({ accountId: account.accountId });
    expect(row!.quantity).toBeGreaterThan(0);
    expect(row!.quantity).toBeLessThan([...LONG].length);
    expect((await t.server.store.getAccount(account.accountId))!.balanceMicros).toBe(10_000_000 - row!.costMicros);
  }, 30_000);

  it('a whole stream is charged every character, as POST /audio/speech charges them', async () => {
    const account = await t.newAccount(10_000_000);
    const { chunks } = await streamChunks('/v2/models/tts/stream', { text: LONG, description: 'Moussa', format: 'ulaw_8k', chunk_size: 0.3 }, account.apiKey);
    expect(chunks.length).toBeGreaterThan(1);
    await chargesSettled(t); // charged once the answer was delivered
    const rows = await t.server.store.listUsage({ accountId: account.accountId });
    expect(rows.map((r) => [r.model, r.unit, r.quantity])).toEqual([['djelia-tts-v2', 'character', [...LONG].length]]);
  });
});
