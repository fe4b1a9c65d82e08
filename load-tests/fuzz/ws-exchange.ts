/**
 * One WebSocket fuzz case on the wire: open the socket (an upgrade the server refuses is classified as the
 * HTTP answer it is), send the case's frames in order, then a probe the server must answer — in-band (an
 * `error` event the target recognises as the probe's) or by closing — and close. Every server message is
 * inspected by the target on the way (a server_error event is a failure even when the socket goes on).
 * The outcome rules are in outcomes.ts.
 */
import WebSocket from 'ws';
import { classifyClose, classifyHttp, type Outcome } from './outcomes.js';

/** A frame to send: text, binary, or bytes sent as a text frame although they are not UTF-8 (uWS drops the connection). */
export type WsFrame = { text: string } | { binary: Uint8Array } | { notUtf8: Uint8Array };

/** What a server message is: the probe's answer, a fine message, or a failure of the server's. */
export type MessageVerdict = 'probe-answered' | 'ok' | { kind: 'ws-server-error' | 'ws-bad-event'; detail: string };

export interface WsExchange {
  /** ws:// URL. */
  url: string;
  headers: Record<string, string>;
  protocols: string[];
  frames: WsFrame[];
  /** Sent after the frames; null when the last frame already asks for an answer (it must be one). */
  probe: WsFrame;
  /** Milliseconds to wait after the frames before the probe (0 most of the time: cases stay fast). */
  pauseMs: number;
  /** Carrier streams: 1011 `app_unreachable` is documented there. */
  carrier: boolean;
  /** The route's message bound (WebSocketRouteLimits), when it has one: uWS drops (1006) a socket sending a bigger message. */
  maxPayloadBytes?: number;
  inspect(data: Buffer, isBinary: boolean): MessageVerdict;
  timeoutMs: number;
}

/** After the verdict, how long the client waits for the server's close frame before dropping the socket. */
const CLOSE_WAIT_MS = 2000;

export function wsExchange(x: WsExchange): Promise<Outcome> {
  return new Promise((resolve) => {
    const droppable = x.frames.some((f) => 'notUtf8' in f || frameBytes(f) > (x.maxPayloadBytes ?? Infinity));
    let failure: Outcome | null = null; // the first failure a message showed; it outranks how the socket ended
    let settled = false;
    const ws = new WebSocket(x.url, x.protocols, { headers: x.headers, perMessageDeflate: false, handshakeTimeout: x.timeoutMs });
    const finish = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(failure ?? outcome);
      if (ws.readyState === WebSocket.OPEN) ws.close(1000, 'fuzz case done');
      const drop = setTimeout(() => ws.terminate(), CLOSE_WAIT_MS);
      drop.unref();
      ws.once('close', () => clearTimeout(drop));
    };
    const timer = setTimeout(() => finish({ kind: 'hang', detail: `no answer to the probe and no close within ${x.timeoutMs} ms` }), x.timeoutMs);

    ws.on('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const headers = { get: (name: string) => (res.headers[name] === undefined ? null : String(res.headers[name])) };
        finish(classifyHttp(res.statusCode ?? 0, headers, Buffer.concat(chunks).toString('utf8')));
      });
      res.on('error', () => finish({ kind: 'no-answer', detail: 'the upgrade answer was cut' }));
    });
    ws.on('error', (error) => {
      // Before the upgrade: nothing answered. After it, 'close' follows and decides.
      if (ws.readyState === WebSocket.CONNECTING) finish({ kind: 'no-answer', detail: String(error).slice(0, 300) });
    });
    ws.on('message', (data: Buffer, isBinary) => {
      const verdict = x.inspect(data, isBinary);
      if (verdict === 'probe-answered') finish({ kind: 'ws-answered' });
      else if (verdict !== 'ok') failure ??= { kind: verdict.kind, detail: verdict.detail.slice(0, 300) };
    });
    ws.on('close', (code, reason) => finish(classifyClose(code, reason.toString(), { droppable, carrier: x.carrier })));
    ws.on('open', () => {
      for (const f of x.frames) send(ws, f);
      const probe = () => ws.readyState === WebSocket.OPEN && send(ws, x.probe);
      if (x.pauseMs > 0) setTimeout(probe, x.pauseMs);
      else probe();
    });
  });
}

function frameBytes(f: WsFrame): number {
  return 'text' in f ? Buffer.byteLength(f.text) : 'binary' in f ? f.binary.length : f.notUtf8.length;
}

function send(ws: WebSocket, f: WsFrame): void {
  if ('text' in f) ws.send(f.text);
  else if ('binary' in f) ws.send(f.binary, { binary: true });
  else ws.send(f.notUtf8, { binary: false });
}

/** The server's message as a JSON object, or null (then it is not the protocol). */
export function jsonObject(data: Buffer): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(data.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export const wsUrlOf = (baseUrl: string, path: string) => baseUrl.replace(/^http/, 'ws') + path;
