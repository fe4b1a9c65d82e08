/**
 * Stopping a server that has connections open (a rolling restart's old worker, a node leaving a balancer):
 * the listener closes, but a request that arrives on a connection accepted before the close is still
 * answered, and its connection is closed after the answer. Only a WebSocket upgrade, whose session would be
 * closed at once, is refused with a retryable 503. A billed request served so is charged once, for what it
 * delivered.
 *
 * Before: every request read after the stop began was answered 503 "shutting down", and the sockets were
 * closed as soon as nothing was in flight, so a request already on its way on an accepted connection was
 * refused or cut (the rolling-restart test saw one such 503 in CI).
 */
import net from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

let t: TestServer | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A raw HTTP/1.1 connection: each answer is read whole (Content-Length), and `ended` says when the server closed it. */
class RawConnection {
  private buffered = '';
  private waiter: (() => void) | null = null;
  readonly ended: Promise<void>;

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (text: string) => {
      this.buffered += text;
      this.waiter?.();
    });
    this.ended = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined); // a reset ends it too; `ended` and the missing answer say so
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  send(request: string): void {
    this.socket.write(request);
  }

  async response(): Promise<RawResponse> {
    for (;;) {
      const parsed = parseResponse(this.buffered);
      if (parsed) {
        this.buffered = this.buffered.slice(parsed.length);
        return parsed.response;
      }
      if (this.socket.destroyed || this.socket.readableEnded)
        throw new Error(`the connection closed without a whole answer (had: ${JSON.stringify(this.buffered)})`);
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
        this.socket.once('close', resolve);
      });
    }
  }
}

function parseResponse(text: string): { response: RawResponse; length: number } | null {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd < 0) return null;
  const [statusLine, ...lines] = text.slice(0, headEnd).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const bodyLength = Number(headers['content-length'] ?? 0);
  if (text.length < headEnd + 4 + bodyLength) return null;
  return {
    response: { status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(headEnd + 4, headEnd + 4 + bodyLength) },
    length: headEnd + 4 + bodyLength,
  };
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: kuma\r\n\r\n`;

it('answers a request that arrives on a connection opened before the stop, then closes that connection', async () => {
  t = await startTestServer({ config: { shutdownGraceMs: 10_000 } });
  const connection = await RawConnection.open(t.server.port);
  connection.send(get('/healthz'));
  expect((await connection.response()).status).toBe(200);

  const stopped = t.server.close();
  connection.send(get('/healthz'));
  const answer = await connection.response();
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.body)).toMatchObject({ status: 'ok' });
  expect(answer.headers.connection).toBe('close');
  await connection.ended;
  await stopped;
  // A new connection is refused: the listener is gone.
  await expect(RawConnection.open(t.server.port)).rejects.toThrow(/ECONNREFUSED/);
});

it('answers each request sent on an accepted connection in the same moment as the stop as it would have been answered before', async () => {
  t = await startTestServer({ config: { shutdownGraceMs: 10_000 } });
  const paths = ['/healthz', '/openai/v1/models', '/nowhere', '/readyz', '/metrics', '/healthz', '/openai/v1/audio/voices', '/healthz'];
  const connections = await Promise.all(paths.map(() => RawConnection.open(t!.server.port)));
  const ask = () => {
    connections.forEach((connection, i) => connection.send(get(paths[i]!)));
    return Promise.all(connections.map((connection) => connection.response()));
  };
  const before = await ask();
  const stopped = t.server.close();
  const after = await ask();
  // None is the shutdown refusal, and none is cut: each is what the server answered while serving, except
  // /readyz, which now says the node is draining.
  for (const answer of after) expect(answer.body).not.toMatch(/shutting down/);
  const readyz = paths.indexOf('/readyz');
  expect(after.map((a, i) => (i === readyz ? 200 : a.status))).toEqual(before.map((a) => a.status));
  expect(before[readyz]!.status).toBe(200);
  expect(after[readyz]).toMatchObject({ status: 503 });
  expect(JSON.parse(after[readyz]!.body)).toMatchObject({ status: 'not_ready' });
  expect(new Set(before.map((a) => a.status)).size).toBeGreaterThan(1); // the paths ask for different answers
  await stopped;
});

it('refuses a WebSocket upgrade asked on an open connection during the stop: 503 with Retry-After', async () => {
  t = await startTestServer({ config: { shutdownGraceMs: 10_000 } });
  const connection = await RawConnection.open(t.server.port);
  connection.send(get('/healthz'));
  expect((await connection.response()).status).toBe(200);

  const stopped = t.server.close();
  connection.send(
    'GET /openai/v1/realtime?intent=transcription HTTP/1.1\r\nHost: kuma\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
  );
  const answer = await connection.response();
  expect(answer.status).toBe(503);
  expect(answer.headers['retry-after']).toMatch(/^\d+$/);
  expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'service_unavailable', message: expect.stringMatching(/shutting down/) } });
  await stopped;
});

it('charges a billed request that arrives during the stop once, for the answer it delivered, and holds nothing after', async () => {
  t = await startTestServer({ config: { shutdownGraceMs: 20_000, modelsManifest: 'models/kuma-models.json', demoPack: false } });
  await t.server.enginesReady;
  const connection = await RawConnection.open(t.server.port);
  connection.send(get('/healthz'));
  expect((await connection.response()).status).toBe(200);

  const stopped = t.server.close();
  const chat = JSON.stringify({
    model: 'banjugu-1',
    messages: [{ role: 'user', content: 'i ni ce' }],
    djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
  });
  connection.send(
    `POST /openai/v1/chat/completions HTTP/1.1\r\nHost: kuma\r\nAuthorization: Bearer ${t.apiKey}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(chat)}\r\n\r\n${chat}`,
  );
  const answer = await connection.response();
  expect(answer.status).toBe(200);
  expect(answer.headers.connection).toBe('close');
  const translated = JSON.parse(answer.body).choices[0].message.content as string;
  expect(translated.length).toBeGreaterThan(0);
  // The charge is recorded once the answer has left (before the store closes with the server).
  const usage = async () => (await t!.server.store.listUsage({ accountId: t!.accountId })).map((r) => [r.model, r.unit, r.quantity]);
  await expect.poll(usage, { timeout: 10_000 }).toEqual([['banjugu-1', 'character', 'i ni ce'.length]]);
  expect(t.server.ledger.openReservations).toBe(0);
  await stopped;
});
