/**
 * REST answers are charged only once delivered — their last bytes written to the network, not merely handed
 * to uWS, which keeps what the kernel does not take (and loses it in a crash). To hold an answer inside the
 * server, a raw client pipelines megabytes of unbilled responses (GET /openapi.json) ahead of a billed chat
 * completion on one keep-alive connection and reads nothing: the kernel's buffers fill with the documents,
 * and the chat answer waits in the server behind them.
 *
 * Before, a charge was recorded before its answer was written: such an answer, never received, was charged
 * (what a SIGKILL turned into a usage row with no delivery).
 */
import net from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spokenPhrases, wavBytes } from '../helpers/audio.js';
import { startRealtimeServer } from '../helpers/realtime.js';
import { chargesSettled } from '../helpers/settled.js';
import type { TestServer } from '../helpers/test-server.js';

const STALL_MS = 1500;
/** ≈ 270 kB each: together far more than a loopback connection's kernel buffers (≈ 4 MB here). */
const DOCUMENTS_AHEAD = 40;
const TEXT = 'i ni ce';

let t: TestServer;
beforeAll(async () => {
  t = await startRealtimeServer({ config: { streamStallTimeoutMs: STALL_MS } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** A connection that has sent the documents' requests and then the chat, and reads nothing (yet). */
async function chatBehindDocuments(apiKey: string, stream: boolean): Promise<{ socket: net.Socket; received: () => string }> {
  const chat = JSON.stringify({
    model: 'banjugu-1',
    stream,
    messages: [{ role: 'user', content: TEXT }],
    djelia: { source_language: 'bam_Latn', target_language: 'eng_Latn' },
  });
  const socket = net.connect(t.server.port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.pause();
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  let requests = '';
  for (let i = 0; i < DOCUMENTS_AHEAD; i++) requests += 'GET /openai/v1/openapi.json HTTP/1.1\r\nHost: kuma\r\n\r\n';
  requests += `POST /openai/v1/chat/completions HTTP/1.1\r\nHost: kuma\r\nAuthorization: Bearer ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(chat)}\r\n\r\n${chat}`;
  socket.write(requests);
  // The chat has been answered (its hold placed, translated, written) when it is the one request left in flight.
  await expect.poll(() => t.server.requestsInFlight() === 1 && t.server.ledger.openReservations === 1, { timeout: 20_000 }).toBe(true);
  return { socket, received: () => received };
}

/** The body of the last response on the connection once it is complete (chunked framing undone), else null. */
function chatAnswer(raw: string): string | null {
  const head = raw.lastIndexOf('HTTP/1.1 ');
  const start = raw.indexOf('\r\n\r\n', head);
  if (head < 0 || start < 0) return null;
  const headers = raw.slice(head, start).toLowerCase();
  let rest = raw.slice(start + 4);
  const length = /content-length: (\d+)/.exec(headers);
  if (length) return rest.length >= Number(length[1]) ? rest.slice(0, Number(length[1])) : null;
  let body = '';
  for (;;) {
    const eol = rest.indexOf('\r\n');
    if (eol < 0) return null;
    const size = parseInt(rest.slice(0, eol), 16);
    if (size === 0) return rest.startsWith('0\r\n\r\n') ? body : null;
    if (rest.length < eol + 2 + size + 2) return null;
    body += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

const rows = async (accountId: string) => (await t.server.store.listUsage({ accountId })).map((r) => [r.model, r.unit, r.quantity]);

describe.each([false, true])('a chat completion (stream: %s) held in the server behind unread responses', (stream) => {
  it('is not charged when the client leaves without reading it', async () => {
    const account = await t.newAccount(10_000_000);
    const { socket } = await chatBehindDocuments(account.apiKey, stream);
    await new Promise((r) => setTimeout(r, 300)); // nothing reads: the answer stays where it is
    expect(await rows(account.accountId)).toEqual([]);
    socket.destroy();
    await chargesSettled(t);
    expect(await rows(account.accountId)).toEqual([]);
    expect(t.server.ledger.openReservations).toBe(0);
    expect((await t.server.store.getAccount(account.accountId))!.balanceMicros).toBe(10_000_000);
  });

  it('is not charged when the client stays without reading: the stall timeout cuts it', async () => {
    const account = await t.newAccount(10_000_000);
    const { socket } = await chatBehindDocuments(account.apiKey, stream);
    await chargesSettled(t); // cut after STALL_MS without progress
    expect(await rows(account.accountId)).toEqual([]);
    expect(t.server.ledger.openReservations).toBe(0);
    socket.destroy();
  });

  it('is charged once the client reads it all', async () => {
    const account = await t.newAccount(10_000_000);
    const { socket, received } = await chatBehindDocuments(account.apiKey, stream);
    socket.resume();
    await expect.poll(() => chatAnswer(received())?.includes(stream ? 'data: [DONE]' : '"object":"chat.completion"') ?? false).toBe(true);
    await chargesSettled(t);
    expect(await rows(account.accountId)).toEqual([['banjugu-1', 'character', [...TEXT].length]]);
    socket.destroy();
  });
});

describe('while the server drains (SIGTERM)', () => {
  it('an answer finished within the grace period is charged, and tells its client to close the connection', async () => {
    const s = await startRealtimeServer({ config: { shutdownGraceMs: 20_000 } });
    try {
      const account = await s.newAccount(10_000_000);
      const form = new FormData();
      form.append('model', 'sunjata-1');
      form.append('file', new Blob([wavBytes(spokenPhrases(['i ni ce', 'a ka kɛnɛ'], 16000, 0.5).samples, 16000)], { type: 'audio/wav' }), 'speech.wav');
      const answer = fetch(`${s.baseUrl}/openai/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${account.apiKey}` },
        body: form,
      });
      await expect.poll(() => s.server.requestsInFlight(), { interval: 1 }).toBe(1);
      const closing = s.server.close(); // draining: the request in flight may finish
      const res = await answer;
      expect(res.status).toBe(200);
      expect(res.headers.get('connection')).toBe('close');
      const seconds = ((await res.json()) as { usage: { seconds: number } }).usage.seconds;
      await closing; // the store is closed once every request, and its charge, is done: read the file
      const db = new Database(path.join(s.dir, 'kuma.sqlite'), { readonly: true });
      const rows = db.prepare('SELECT quantity FROM usage_records WHERE account_id = ?').all(account.accountId) as Array<{ quantity: number }>;
      db.close();
      expect(rows.map((r) => r.quantity)).toEqual([seconds]);
    } finally {
      await s.close();
    }
  }, 60_000);
});
