/**
 * A stand-in for the integrator's ConversationRelay application, for tests of Kuma's relay link and calls:
 * a real `ws` WebSocket server on an ephemeral port that records every message it receives (with the time
 * it came) and runs a script against each connection — reply word by word to a final prompt, echo the
 * prompt, end with handoffData, send garbage. Also: a server that accepts TCP but never answers the
 * upgrade (an app that never answers), and a small static HTTP server for `play` sources.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export interface ReceivedMessage {
  /** performance.now() when it arrived. */
  at: number;
  text: string;
  /** The parsed JSON, or null when the frame was not JSON (or was binary). */
  json: any;
}

export class RelayAppConnection {
  readonly received: ReceivedMessage[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: Array<{ match: (m: ReceivedMessage) => boolean; resolve: (m: ReceivedMessage) => void }> = [];

  constructor(
    readonly ws: WebSocket,
    readonly headers: IncomingHttpHeaders,
    readonly path: string,
    private readonly socket: net.Socket,
  ) {
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })));
    ws.on('error', () => {});
    ws.on('message', (data, isBinary) => {
      const text = isBinary ? '' : (data as Buffer).toString('utf8');
      let json: any = null;
      try {
        json = isBinary ? null : JSON.parse(text);
      } catch {
        // not JSON: recorded as text
      }
      const message = { at: performance.now(), text, json };
      this.received.push(message);
      this.waiters = this.waiters.filter((w) => (w.match(message) ? (w.resolve(message), false) : true));
    });
  }

  /** The first message (already received or to come) of this type, or matching the predicate. */
  next(match: string | ((m: ReceivedMessage) => boolean)): Promise<ReceivedMessage> {
    const test = typeof match === 'string' ? (m: ReceivedMessage) => m.json?.type === match : match;
    const seen = this.received.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      this.waiters.push({ match: test, resolve });
      void this.closed.then(({ code }) => reject(new Error(`the link closed (${code}) before the awaited message`)));
    });
  }

  ofType(type: string): any[] {
    return this.received.filter((m) => m.json?.type === type).map((m) => m.json);
  }

  send(message: object | string): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  sendBinary(bytes: Uint8Array): void {
    this.ws.send(bytes, { binary: true });
  }

  close(code = 1000, reason = ''): void {
    this.ws.close(code, reason);
  }

  /** Stops reading from the TCP socket: Kuma's writes pile up and pings go unanswered (a stuck app). */
  stopReading(): void {
    this.socket.pause();
  }
}

/** What an app does with each connection; called once, right after the upgrade. */
export type RelayAppScript = (connection: RelayAppConnection) => void;

export interface RelayApp {
  /** ws://127.0.0.1:PORT/relay */
  url: string;
  port: number;
  /** Every upgraded connection, in order. */
  connections: RelayAppConnection[];
  /** TCP connections accepted, upgraded or not (0 proves nothing was dialled). */
  tcpConnections(): number;
  nextConnection(): Promise<RelayAppConnection>;
  close(): Promise<void>;
}

export async function startRelayApp(script: RelayAppScript = () => {}): Promise<RelayApp> {
  const server = http.createServer((_req, res) => res.writeHead(426).end());
  const wss = new WebSocketServer({ noServer: true });
  const connections: RelayAppConnection[] = [];
  const pending: Array<(c: RelayAppConnection) => void> = [];
  let tcp = 0;
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket) => {
    tcp += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('upgrade', (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      const connection = new RelayAppConnection(ws, req.headers, req.url ?? '/', socket as net.Socket);
      connections.push(connection);
      script(connection);
      pending.splice(0).forEach((resolve) => resolve(connection));
    });
  });
  const port = await listen(server);
  return {
    url: `ws://127.0.0.1:${port}/relay`,
    port,
    connections,
    tcpConnections: () => tcp,
    nextConnection: () => new Promise((resolve) => pending.push(resolve)),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ── Scripts ───────────────────────────────────────────────────────────────────────────────────────────

/** On each final prompt, replies with `reply(prompt)` as `text` tokens word by word, `last` on the final one. */
export function wordByWordApp(reply: (prompt: string) => string): RelayAppScript {
  return (connection) => {
    connection.ws.on('message', (data) => {
      const message = safeJson(data.toString());
      if (message?.type !== 'prompt' || message.last !== true) return;
      const words = reply(String(message.voicePrompt)).split(/\s+/).filter(Boolean);
      words.forEach((word, i) => connection.send({ type: 'text', token: i === 0 ? word : ` ${word}`, last: i === words.length - 1 }));
    });
  };
}

/** Repeats each final prompt back as one `text` token. */
export const echoApp: RelayAppScript = wordByWordApp((prompt) => prompt);

/** Ends the session as soon as it gets `setup`, handing off `handoffData`. */
export function endingApp(handoffData: string): RelayAppScript {
  return (connection) => {
    void connection.next('setup').then(() => connection.send({ type: 'end', handoffData }));
  };
}

/** Sends each of `frames` (strings as text, Uint8Arrays as binary) as soon as it gets `setup`. */
export function scriptedApp(frames: Array<string | object | Uint8Array>): RelayAppScript {
  return (connection) => {
    void connection.next('setup').then(() => {
      for (const frame of frames) frame instanceof Uint8Array ? connection.sendBinary(frame) : connection.send(frame);
    });
  };
}

function safeJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

// ── An app that never answers the upgrade ─────────────────────────────────────────────────────────────

/** Accepts TCP connections and never says a word: a WebSocket upgrade to it hangs. */
export async function startSilentServer(): Promise<{ url: string; connections(): number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let count = 0;
  const server = net.createServer((socket) => {
    count += 1;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await listen(server);
  return {
    url: `ws://127.0.0.1:${port}/relay`,
    connections: () => count,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ── Static HTTP server for `play` sources ────────────────────────────────────────────────────────────

export type StaticRoute =
  | { body: Uint8Array | string; contentType?: string; status?: number; omitLength?: boolean }
  /** A redirect to `location` (absolute, or a path on this server). */
  | { redirect: string; status?: 301 | 302 | 303 | 307 | 308 }
  /** Writes `chunk` again and again, without a Content-Length, until the client goes away. */
  | { endless: Uint8Array; contentType?: string }
  /** Sends the head and then nothing (or nothing at all): a stalled server. */
  | { hang: 'before-head' | 'after-head' };

export interface StaticServer {
  baseUrl: string;
  /** Paths requested, in order. */
  requests: string[];
  /** How many responses the client abandoned before they ended. */
  abandoned(): number;
  close(): Promise<void>;
}

export async function startStaticServer(routes: Record<string, StaticRoute>): Promise<StaticServer> {
  const requests: string[] = [];
  let abandoned = 0;
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    requests.push(path);
    res.on('close', () => {
      if (!res.writableFinished) abandoned += 1;
    });
    const route = routes[path];
    if (!route) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    if ('redirect' in route) return void res.writeHead(route.status ?? 302, { location: route.redirect }).end();
    if ('hang' in route) {
      if (route.hang === 'after-head') res.writeHead(200, { 'content-type': 'audio/wav' }).flushHeaders();
      return;
    }
    if ('endless' in route) {
      res.writeHead(200, { 'content-type': route.contentType ?? 'audio/wav' });
      const pump = () => {
        while (!res.destroyed && res.write(route.endless));
      };
      res.on('drain', pump);
      pump();
      return;
    }
    const body = typeof route.body === 'string' ? Buffer.from(route.body) : Buffer.from(route.body);
    const headers: Record<string, string | number> = { 'content-type': route.contentType ?? 'audio/wav' };
    if (!route.omitLength) headers['content-length'] = body.length;
    res.writeHead(route.status ?? 200, headers).end(body);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await listen(server);
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    abandoned: () => abandoned,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}
