/**
 * The relay link against a real WebSocket application on an ephemeral port (test/helpers/relay-app.ts).
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { RelayLinkError, type RelayMessageError } from '../../../../src/telephony/relay/relay-errors.js';
import { RELAY_CLOSE, RelayLink, type RelayLinkOptions } from '../../../../src/telephony/relay/relay-link.js';
import { promptMessage, setupMessage, type AppMessage } from '../../../../src/telephony/relay/relay-messages.js';
import { echoApp, endingApp, scriptedApp, startRelayApp, startSilentServer, wordByWordApp, type RelayApp } from '../../../helpers/relay-app.js';

const allowAll = async () => {};
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function app(script?: Parameters<typeof startRelayApp>[0]): Promise<RelayApp> {
  const started = await startRelayApp(script);
  cleanups.push(() => started.close());
  return started;
}

/** Connects and records every event the link reports. */
async function link(url: string, options: Partial<RelayLinkOptions> = {}) {
  const messages: AppMessage[] = [];
  const invalid: RelayMessageError[] = [];
  let resolveClose!: (c: { code: number; reason: string; error?: unknown }) => void;
  const closed = new Promise<{ code: number; reason: string; error?: unknown }>((resolve) => (resolveClose = resolve));
  let closes = 0;
  const waiters: Array<() => void> = [];
  const relay = await RelayLink.connect(url, {
    checkUrl: allowAll,
    onMessage: (m) => {
      messages.push(m);
      waiters.splice(0).forEach((w) => w());
    },
    onInvalid: (e) => invalid.push(e),
    onClose: (code, reason, error) => {
      closes += 1;
      resolveClose({ code, reason, error });
    },
    ...options,
  });
  cleanups.push(() => relay.close());
  const until = async (test: () => boolean) => {
    while (!test()) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  return { relay, messages, invalid, closed, closes: () => closes, until };
}

const setup = setupMessage({ sessionId: 'VX1', callSid: 'CA1', from: '+22370000000', to: '+22320000000', direction: 'inbound' });

describe('RelayLink: talking with the application', () => {
  it('sends setup and a final prompt; receives the reply word by word, the last token marked last', async () => {
    const server = await app(wordByWordApp(() => 'I ni ce, i ka kɛnɛ wa?'));
    const { relay, messages, until } = await link(server.url);
    expect(relay.send(setup)).toBe(true);
    expect(relay.send(promptMessage({ voicePrompt: 'I ni sogoma', lang: 'bm-ML', last: true }))).toBe(true);
    await until(() => messages.some((m) => m.type === 'text' && m.last));
    expect(messages).toEqual([
      { type: 'text', token: 'I', last: false },
      { type: 'text', token: ' ni', last: false },
      { type: 'text', token: ' ce,', last: false },
      { type: 'text', token: ' i', last: false },
      { type: 'text', token: ' ka', last: false },
      { type: 'text', token: ' kɛnɛ', last: false },
      { type: 'text', token: ' wa?', last: true },
    ]);
    const connection = server.connections[0]!;
    expect(connection.received.map((m) => m.json)).toEqual([setup, { type: 'prompt', voicePrompt: 'I ni sogoma', lang: 'bm-ML', last: true }]);
  });

  it('connects to the address the allow-list check vetted, not to a second resolution of the name', async () => {
    const a = await app(echoApp);
    // `.invalid` never resolves (RFC 2606): only the pinned address can reach the app.
    const { relay } = await link(`ws://kuma-relay.invalid:${a.port}/relay`, { checkUrl: async () => ({ address: '127.0.0.1', family: 4 }) });
    expect(relay.isOpen).toBe(true);
    expect(a.connections).toHaveLength(1);
  });

  it('passes the upgrade headers it was given (e.g. a signature the app verifies)', async () => {
    const server = await app(echoApp);
    await link(server.url, { headers: { 'x-kuma-signature': 'abc' } });
    expect(server.connections[0]!.headers['x-kuma-signature']).toBe('abc');
  });

  it('a message the app sends the instant it accepts is not lost, and comes after connect resolved', async () => {
    const server = await app((connection) => connection.send({ type: 'text', token: 'early', last: true }));
    let resolved = false;
    const messages: AppMessage[] = [];
    const seen = new Promise<boolean>((resolve) => {
      void RelayLink.connect(server.url, {
        checkUrl: allowAll,
        onMessage: (m) => {
          messages.push(m);
          resolve(resolved);
        },
        onClose: () => {},
      }).then((relay) => {
        resolved = true;
        cleanups.push(() => relay.close());
      });
    });
    expect(await seen).toBe(true);
    expect(messages).toEqual([{ type: 'text', token: 'early', last: true }]);
  });

  it('a malformed message gets an `error` back and the link goes on with the next one', async () => {
    const server = await app(scriptedApp(['this is not json', { type: 'speak' }, new Uint8Array([1, 2, 3]), { type: 'text', token: 'ok', last: true }]));
    const { relay, messages, invalid, until } = await link(server.url);
    relay.send(setup);
    await until(() => messages.length === 1);
    expect(messages).toEqual([{ type: 'text', token: 'ok', last: true }]);
    expect(invalid.map((e) => e.code)).toEqual(['invalid_json', 'unknown_type', 'unsupported_frame']);
    const connection = server.connections[0]!;
    await connection.next((m) => connection.ofType('error').length === 3);
    const errors = connection.ofType('error').map((e) => e.description as string);
    expect(errors[0]).toMatch(/^Invalid message received: the message is not valid JSON/);
    expect(errors[1]).toMatch(/unknown message type "speak"/);
    expect(errors[2]).toMatch(/binary frames/);
    expect(relay.isOpen).toBe(true);
  });

  it('the app ending the session: `end` with handoffData, then its close reaches onClose once', async () => {
    const server = await app(endingApp('{"reason":"agent"}'));
    const { relay, messages, closed, closes, until } = await link(server.url);
    relay.send(setup);
    await until(() => messages.length === 1);
    expect(messages[0]).toEqual({ type: 'end', handoffData: '{"reason":"agent"}' });
    server.connections[0]!.close(1000, 'bye');
    expect(await closed).toEqual({ code: 1000, reason: 'bye', error: undefined });
    expect(relay.isOpen).toBe(false);
    expect(relay.send(promptMessage({ voicePrompt: 'x', lang: 'bm-ML', last: true }))).toBe(false);
    relay.close();
    expect(closes()).toBe(1);
  });

  it("close() reaches the app with Kuma's code and reason; send afterwards answers false", async () => {
    const server = await app();
    const { relay, closed } = await link(server.url);
    const appSide = server.connections[0]!.closed;
    relay.close(1000, 'call ended');
    expect(await closed).toMatchObject({ code: 1000, reason: 'call ended' });
    expect(await appSide).toEqual({ code: 1000, reason: 'call ended' });
    expect(relay.send(setup)).toBe(false);
  });

  it("the call's signal closes an open link with 1001", async () => {
    const server = await app();
    const controller = new AbortController();
    const { closed } = await link(server.url, { signal: controller.signal });
    controller.abort();
    expect(await closed).toMatchObject({ code: RELAY_CLOSE.goingAway });
    expect((await server.connections[0]!.closed).code).toBe(1001);
  });

  it('a handler that throws ends the link (1011) instead of the process', async () => {
    const server = await app(scriptedApp([{ type: 'text', token: 'boom', last: true }]));
    const { relay, closed } = await link(server.url, {
      onMessage: () => {
        throw new Error('handler bug');
      },
    });
    relay.send(setup);
    const result = await closed;
    expect(result.code).toBe(RELAY_CLOSE.unresponsive);
    expect((result.error as Error).message).toBe('handler bug');
  });
});

describe('RelayLink: an application that misbehaves', () => {
  it('a refused URL: the allow-list check runs first and nothing is dialled', async () => {
    const server = await app();
    const checked: string[] = [];
    const attempt = RelayLink.connect(server.url, {
      checkUrl: (url) => {
        checked.push(url.host);
        throw new Error('127.0.0.1 is a loopback address');
      },
      onMessage: () => {},
      onClose: () => {},
    });
    await expect(attempt).rejects.toMatchObject({ name: 'RelayLinkError', code: 'not_allowed', message: expect.stringContaining('loopback') });
    expect(checked).toEqual([`127.0.0.1:${server.port}`]);
    expect(server.tcpConnections()).toBe(0);
  });

  it.each(['http://example.com/relay', 'not a url', 'ftp://example.com/'])('refuses %s before checking or dialling', async (url) => {
    let checked = false;
    const attempt = RelayLink.connect(url, { checkUrl: () => void (checked = true), onMessage: () => {}, onClose: () => {} });
    await expect(attempt).rejects.toMatchObject({ code: 'invalid_url' });
    expect(checked).toBe(false);
  });

  it('an app that never answers the upgrade: a connect timeout error', async () => {
    const silent = await startSilentServer();
    cleanups.push(() => silent.close());
    let closes = 0;
    const attempt = RelayLink.connect(silent.url, { checkUrl: allowAll, connectTimeoutMs: 200, onMessage: () => {}, onClose: () => void (closes += 1) });
    const error = await attempt.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RelayLinkError);
    expect(error).toMatchObject({ code: 'connect_timeout', message: expect.stringContaining('did not accept the WebSocket within 200 ms') });
    expect(silent.connections()).toBe(1);
    expect(closes).toBe(0);
  });

  it('an app that answers the upgrade with an HTTP status, and a port nobody listens on: connect_failed', async () => {
    const plain = http.createServer((_req, res) => res.writeHead(404).end('no relay here'));
    plain.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n'));
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', () => resolve()));
    const port = (plain.address() as { port: number }).port;
    await expect(RelayLink.connect(`ws://127.0.0.1:${port}/relay`, { checkUrl: allowAll, onMessage: () => {}, onClose: () => {} })).rejects.toMatchObject({
      code: 'connect_failed',
      message: expect.stringContaining('HTTP 404'),
    });
    await new Promise<void>((resolve) => plain.close(() => resolve()));
    await expect(RelayLink.connect(`ws://127.0.0.1:${port}/relay`, { checkUrl: allowAll, onMessage: () => {}, onClose: () => {} })).rejects.toMatchObject({
      code: 'connect_failed',
    });
  });

  it('the call ending while the upgrade hangs: aborted, not a timeout', async () => {
    const silent = await startSilentServer();
    cleanups.push(() => silent.close());
    const controller = new AbortController();
    const attempt = RelayLink.connect(silent.url, {
      checkUrl: allowAll,
      connectTimeoutMs: 60_000,
      signal: controller.signal,
      onMessage: () => {},
      onClose: () => {},
    });
    while (silent.connections() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    await expect(attempt).rejects.toMatchObject({ code: 'aborted' });
  });

  it('an app that stops reading: the link gives up once the bound is reached, with a clear reason', async () => {
    const server = await app((connection) => connection.stopReading());
    const { relay, closed } = await link(server.url, { maxBufferedBytes: 256 * 1024 });
    const token = promptMessage({ voicePrompt: 'x'.repeat(16 * 1024), lang: 'bm-ML', last: false });
    let sent = 0;
    // Loopback socket buffers take a few MB before anything waits in the link; 64 MB is far past both.
    while (relay.send(token) && sent < 4096) sent += 1;
    expect(sent).toBeLessThan(4096);
    expect(await closed).toMatchObject({ code: RELAY_CLOSE.unresponsive, reason: expect.stringContaining('not reading') });
    expect(relay.send(token)).toBe(false);
  });

  it('an app that stops answering pings: the link ends with a clear reason', async () => {
    const server = await app((connection) => connection.stopReading());
    const { closed } = await link(server.url, { pingIntervalMs: 50 });
    expect(await closed).toMatchObject({ code: RELAY_CLOSE.unresponsive, reason: 'the relay application stopped answering pings' });
  });

  it('a live app answers pings and the link stays open across several of them', async () => {
    const server = await app();
    // 200 ms: generous beside a loaded machine's event-loop stalls (the pong must come before the next ping).
    const { relay, closes } = await link(server.url, { pingIntervalMs: 200 });
    const connection = server.connections[0]!;
    let pings = 0;
    connection.ws.on('ping', () => (pings += 1));
    while (pings < 3) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(relay.isOpen).toBe(true);
    expect(closes()).toBe(0);
  });

  it('a message over maxMessageBytes closes the link with 1009', async () => {
    const server = await app(scriptedApp([{ type: 'text', token: 'x'.repeat(2048), last: true }]));
    const { relay, messages, closed } = await link(server.url, { maxMessageBytes: 1024 });
    relay.send(setup);
    expect(await closed).toMatchObject({ code: 1009, reason: 'the relay application sent a message over 1024 bytes' });
    expect(messages).toEqual([]);
  });
});
