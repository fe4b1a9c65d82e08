/**
 * The load generator's raw RFC 6455 client (load-tests/realtime/raw-websocket.ts) against two independent
 * servers: Kuma's own /openai/v1/realtime route (uWebSockets.js) — handshake, frames built and masked once and
 * shared by two connections, events received whole, ping → pong, close either way — and a `ws` server for
 * what Kuma never sends (64-bit lengths, fragmented messages, a ping on demand, masked server frames). The
 * recorded server byte streams are then re-read split at every byte and at random cut points.
 */
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import { RawWebSocket } from '../../../load-tests/realtime/raw-websocket.js';
import { FrameReader, OPCODE, clientFrame } from '../../../load-tests/realtime/websocket-frames.js';
import { appends, gaUpdate, silence, speak, startRealtimeServer } from '../../helpers/realtime.js';
import type { TestServer } from '../../helpers/test-server.js';

const MASK = crypto.randomBytes(4);

/** A raw client that records what it delivers and every byte the server sent after the handshake. */
class Recorder {
  readonly texts: string[] = [];
  readonly bytes: Buffer[] = [];
  readonly errors: string[] = [];
  readonly socket: RawWebSocket;
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: Array<() => void> = [];

  constructor(url: string, apiKey: string) {
    let onClose!: (value: { code: number; reason: string }) => void;
    this.closed = new Promise((resolve) => (onClose = resolve));
    const wake = () => this.waiters.splice(0).forEach((w) => w());
    this.socket = new RawWebSocket(
      url,
      { headers: { authorization: `Bearer ${apiKey}` }, mask: MASK },
      {
        onText: (text) => (this.texts.push(text), wake()),
        onError: (err) => (this.errors.push(err.message), wake()),
        onClose: (code, reason) => (onClose({ code, reason }), wake()),
        onData: (chunk) => (this.bytes.push(Buffer.from(chunk)), wake()),
      },
    );
  }

  events(): Array<Record<string, any>> {
    return this.texts.map((t) => JSON.parse(t));
  }

  /** Waits until `done()` holds (every text, error or byte re-checks it). */
  async until(done: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline)
        throw new Error(`no ${what}; texts: ${this.texts.map((t) => JSON.parse(t).type).join(', ')}; errors: ${this.errors.join('; ')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
  }

  untilEvent(type: string): Promise<void> {
    return this.until(() => this.events().some((e) => e.type === type), type);
  }
}

/** Everything a fresh reader delivers from `stream` cut at `cuts` (sorted offsets). */
function reread(stream: Buffer, cuts: number[]) {
  const out = { texts: [] as string[], binaries: 0, pings: [] as string[], closes: [] as Array<[number, string]> };
  const reader = new FrameReader({
    message: (opcode, payload) => (opcode === OPCODE.text ? out.texts.push(payload.toString('utf8')) : out.binaries++),
    ping: (payload) => out.pings.push(payload.toString('hex')),
    close: (code, reason) => out.closes.push([code, reason]),
  });
  let at = 0;
  for (const cut of [...cuts, stream.length]) {
    reader.push(stream.subarray(at, cut));
    at = cut;
  }
  return out;
}

const everyByte = (stream: Buffer) => Array.from({ length: stream.length - 1 }, (_, i) => i + 1);
const randomCuts = (stream: Buffer) =>
  fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 200 }).map((cuts) => cuts.sort((a, b) => a - b));

describe('against Kuma (/openai/v1/realtime)', () => {
  let t: TestServer;
  let url: string;
  beforeAll(async () => {
    // An 8 s idle timeout: uWS pings a socket after 4 s without input and drops it 4 s later without a pong.
    t = await startRealtimeServer({ config: { wsIdleTimeoutS: 8, realtimeMaxMessageBytes: 4096 } });
    url = `ws://127.0.0.1:${t.server.port}/openai/v1/realtime?intent=transcription`;
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  let recorded: { stream: Buffer; texts: string[] };

  it('two sessions send the same prebuilt masked frames; each transcribes them, every event whole; close → 1000', async () => {
    // Built and masked once, shared by both connections, as the load generator does.
    const frames = appends(Buffer.concat([await speak(t, 'i ni ce'), silence(0.2)])).map((e) => clientFrame(OPCODE.text, Buffer.from(e), MASK));
    const clients = [new Recorder(url, t.apiKey), new Recorder(url, t.apiKey)];
    for (const c of clients) {
      await c.untilEvent('session.created');
      c.socket.sendText(JSON.stringify(gaUpdate({ turn_detection: null })));
      await c.untilEvent('session.updated');
    }
    for (const c of clients) {
      c.socket.sendFrame(frames[0]!);
      c.socket.sendFrames(frames.slice(1));
      c.socket.sendText(JSON.stringify({ type: 'input_audio_buffer.commit' }));
    }
    for (const c of clients) {
      await c.untilEvent('conversation.item.input_audio_transcription.completed');
      const events = c.events();
      expect(events[0]!.type).toBe('session.created');
      expect(events.find((e) => e.type === 'conversation.item.input_audio_transcription.completed')!.transcript).toBe('i ni ce');
      expect(c.errors).toEqual([]);
    }
    for (const c of clients) c.socket.close(1000);
    for (const c of clients) expect(await c.closed).toEqual({ code: 1000, reason: '' });
    recorded = { stream: Buffer.concat(clients[0]!.bytes), texts: clients[0]!.texts };
    // session.created is over 125 bytes: the stream has 16-bit lengths as well as 7-bit ones.
    expect(recorded.texts.some((text) => Buffer.byteLength(text) > 125)).toBe(true);
  });

  it('the recorded stream read 1 byte at a time, and cut anywhere (property), gives the same events and the close', () => {
    const whole = reread(recorded.stream, []);
    expect(whole.texts).toEqual(recorded.texts);
    expect(whole.closes).toEqual([[1000, '']]);
    expect(reread(recorded.stream, everyByte(recorded.stream))).toEqual(whole);
    fc.assert(fc.property(randomCuts(recorded.stream), (cuts) => void expect(reread(recorded.stream, cuts)).toEqual(whole)));
  });

  it('a server close (session.close → 1000 "session closed") is echoed; onClose gets its code and reason', async () => {
    const c = new Recorder(url, t.apiKey);
    await c.untilEvent('session.created');
    c.socket.sendText(JSON.stringify({ type: 'session.close' }));
    expect(await c.closed).toEqual({ code: 1000, reason: 'session closed' });
    expect(c.socket.sendText('{}')).toBe(false);
    // The server's close frame is the last thing on the wire.
    expect(reread(Buffer.concat(c.bytes), []).closes).toEqual([[1000, 'session closed']]);
  });

  it('pings are answered with pongs: an idle session outlives two ping rounds', async () => {
    const c = new Recorder(url, t.apiKey);
    await c.untilEvent('session.created');
    let closedEarly = false;
    void c.closed.then(() => (closedEarly = true));
    // Without a pong uWS would drop the socket 4 s after the first ping, before a second one is due.
    await c.until(() => reread(Buffer.concat(c.bytes), []).pings.length >= 2 || closedEarly, 'two pings', 25_000);
    expect(closedEarly).toBe(false);
    c.socket.close();
    expect((await c.closed).code).toBe(1000);
  }, 30_000);

  it('a refused upgrade (bad key) is an error, with no open and no close', async () => {
    const c = new Recorder(url, 'sk-not-a-key');
    await c.until(() => c.errors.length > 0, 'error');
    expect(c.errors).toEqual(['upgrade refused: 401']);
    expect(c.socket.isOpen).toBe(false);
  });
});

describe('against a ws server (frames Kuma never sends)', () => {
  let wss: WebSocketServer;
  let url: string;
  const pongs: string[] = [];
  let script: (socket: ServerSocket) => void = () => {};
  beforeAll(async () => {
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((resolve) => wss.once('listening', resolve));
    url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/`;
    wss.on('connection', (socket) => {
      socket.on('pong', (data) => pongs.push(data.toString('hex')));
      script(socket);
    });
  });
  afterAll(() => new Promise<void>((resolve) => wss.close(() => resolve())));

  it('64-bit lengths, fragments with a ping between them, binary ignored; pong echoes the ping; server close 4000', async () => {
    const big = JSON.stringify({ type: 'big', text: 'ɛ'.repeat(40_000) }); // > 65535 bytes: a 64-bit length
    const ping = crypto.randomBytes(20);
    script = (socket) => {
      socket.send('{"type":"first"}');
      socket.send(big);
      socket.send('{"type":"frag', { fin: false });
      socket.ping(ping);
      socket.send('mented","n":', { fin: false });
      socket.send('2}', { fin: true });
      socket.send(Buffer.from([1, 2, 3]));
      socket.on('pong', () => socket.close(4000, 'bye'));
    };
    const c = new Recorder(url, 'unused');
    expect(await c.closed).toEqual({ code: 4000, reason: 'bye' });
    expect(c.texts).toEqual(['{"type":"first"}', big, '{"type":"fragmented","n":2}']);
    expect(pongs).toEqual([ping.toString('hex')]);

    const stream = Buffer.concat(c.bytes);
    const whole = reread(stream, []);
    expect(whole).toEqual({ texts: c.texts, binaries: 1, pings: [ping.toString('hex')], closes: [[4000, 'bye']] });
    expect(reread(stream, everyByte(stream))).toEqual(whole);
    fc.assert(
      fc.property(randomCuts(stream), (cuts) => void expect(reread(stream, cuts)).toEqual(whole)),
      { numRuns: 50 },
    );
  });

  it('a masked server frame fails the connection (protocol error, close)', async () => {
    script = (socket) => socket.send('{"type":"masked"}', { mask: true });
    const c = new Recorder(url, 'unused');
    await c.closed;
    expect(c.texts).toEqual([]);
    expect(c.errors).toEqual(['server frames must not be masked']);
  });
});
