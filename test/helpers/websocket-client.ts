/**
 * `ws` client helpers for tests of WebSocket routes: connect and get either the open socket or the HTTP
 * answer that refused the upgrade (status, headers, JSON body), collect messages, await the close.
 */
import type { IncomingMessage } from 'node:http';
import WebSocket, { type ClientOptions } from 'ws';

export type Upgrade =
  { kind: 'open'; ws: WebSocket; response: IncomingMessage } | { kind: 'refused'; status: number; headers: IncomingMessage['headers']; body: any };

export function connect(url: string, options: ClientOptions & { protocols?: string[] } = {}): Promise<Upgrade> {
  const { protocols, ...rest } = options;
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols ?? [], rest);
    let response: IncomingMessage | null = null;
    ws.once('upgrade', (res) => (response = res));
    ws.once('open', () => resolve({ kind: 'open', ws, response: response! }));
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: kept as text
        }
        resolve({ kind: 'refused', status: res.statusCode ?? 0, headers: res.headers, body });
        ws.terminate();
      });
    });
    ws.once('error', (err) => reject(err));
  });
}

/** Connects and fails the test unless the upgrade succeeded. */
export async function open(url: string, options: ClientOptions & { protocols?: string[] } = {}): Promise<WebSocket> {
  const result = await connect(url, options);
  if (result.kind !== 'open') throw new Error(`upgrade refused: ${result.status} ${JSON.stringify(result.body)}`);
  return result.ws;
}

/** Resolves with the close code and reason (1006 when the connection dropped without a close frame). */
export function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve({ code: (ws as any)._closeCode ?? 1006, reason: '' });
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })));
}

/** The next message, as text or bytes. */
export function nextMessage(ws: WebSocket): Promise<{ data: Buffer; isBinary: boolean }> {
  return new Promise((resolve, reject) => {
    const onClose = (code: number) => reject(new Error(`closed (${code}) before a message`));
    ws.once('message', (data, isBinary) => {
      ws.off('close', onClose);
      resolve({ data: data as Buffer, isBinary });
    });
    ws.once('close', onClose);
  });
}

export async function nextText(ws: WebSocket): Promise<string> {
  const { data, isBinary } = await nextMessage(ws);
  if (isBinary) throw new Error('expected a text message');
  return data.toString('utf8');
}

export function wsUrl(baseUrl: string, path: string): string {
  return baseUrl.replace(/^http/, 'ws') + path;
}
