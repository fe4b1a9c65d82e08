/**
 * A lean HTTP/1.1 client for load generators that only need to drain long streamed responses: one keep-alive
 * socket, the request written as bytes, the response's chunked body walked and dropped without copying it.
 * fetch (undici) builds a web stream and a buffer per chunk; at tens of MB/s of PCM that is a large share of a
 * 2-core machine, taken from the server under test. Only what Kuma answers is handled: a status line,
 * headers, and either Content-Length or chunked transfer coding.
 */
import net from 'node:net';

export interface RawPost {
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface RawResponse {
  status: number;
  /** Body bytes (after removing the chunked coding). */
  bytes: number;
  /** The status line and headers, as sent. */
  head: string;
  /** Milliseconds from writing the request to the first body byte (to the head when there is no body). */
  ttfb: number;
}

/** A header's value from a response head (first occurrence, case-insensitive), or undefined. */
export function headerValue(head: string, name: string): string | undefined {
  const match = new RegExp(`\\r\\n${name}:[ \\t]*([^\\r]*)`, 'i').exec(head);
  return match?.[1];
}

export class RawHttpClient {
  private socket: net.Socket | null = null;

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** Sends the request and resolves once the body has ended, with the status, head, body size and TTFB. */
  async post(request: RawPost): Promise<RawResponse> {
    const socket = await this.connected();
    const body = Buffer.from(request.body);
    const head = [
      `POST ${request.path} HTTP/1.1`,
      `Host: ${this.host}:${this.port}`,
      `Content-Length: ${body.length}`,
      ...Object.entries(request.headers).map(([k, v]) => `${k}: ${v}`),
    ].join('\r\n');
    return new Promise((resolve, reject) => {
      const sentAt = performance.now();
      const reader = new ResponseReader((response) => {
        socket.off('data', onData).off('error', onError).off('close', onClose);
        resolve({ ...response, ttfb: response.firstByteAt - sentAt });
      });
      const onData = (chunk: Buffer) => {
        try {
          reader.push(chunk);
        } catch (err) {
          onError(err as Error);
        }
      };
      const onError = (err: Error) => {
        socket.off('data', onData).off('error', onError).off('close', onClose);
        this.socket = null;
        socket.destroy();
        reject(err);
      };
      const onClose = () => onError(new Error('connection closed before the response ended'));
      socket.on('data', onData).on('error', onError).on('close', onClose);
      socket.write(Buffer.concat([Buffer.from(`${head}\r\n\r\n`), body]));
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }

  private connected(): Promise<net.Socket> {
    if (this.socket && !this.socket.destroyed) return Promise.resolve(this.socket);
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.port, this.host, () => {
        socket.off('error', reject);
        socket.setNoDelay(true);
        this.socket = socket;
        resolve(socket);
      });
      socket.once('error', reject);
    });
  }
}

/** Walks one response: head, then a Content-Length body or chunked coding, counting body bytes. */
class ResponseReader {
  private head = '';
  private status = 0;
  private mode: 'head' | 'length' | 'size' | 'data' | 'data-crlf' | 'trailer' | 'done' = 'head';
  private left = 0;
  private sizeLine = '';
  private bytes = 0;
  private firstByteAt = 0;

  constructor(private readonly done: (response: { status: number; bytes: number; head: string; firstByteAt: number }) => void) {}

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && this.mode !== 'done') {
      if (this.mode === 'head') {
        const text = chunk.toString('latin1', at);
        const end = (this.head + text).indexOf('\r\n\r\n');
        if (end < 0) {
          this.head += text;
          return;
        }
        const consumed = end + 4 - this.head.length;
        this.head = (this.head + text).slice(0, end);
        at += consumed;
        this.status = Number(this.head.slice(9, 12));
        this.firstByteAt = performance.now(); // replaced by the first body byte's time, if there is a body
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(this.head);
        if (/\r\ntransfer-encoding:\s*chunked/i.test(this.head)) this.mode = 'size';
        else {
          this.left = Number(length?.[1] ?? 0);
          this.mode = this.left > 0 ? 'length' : 'done';
        }
      } else if (this.mode === 'length' || this.mode === 'data') {
        const take = Math.min(this.left, chunk.length - at);
        if (this.bytes === 0 && take > 0) this.firstByteAt = performance.now();
        this.left -= take;
        this.bytes += take;
        at += take;
        if (this.left === 0) this.mode = this.mode === 'length' ? 'done' : 'data-crlf';
      } else if (this.mode === 'data-crlf') {
        this.left = this.left || 2;
        const take = Math.min(this.left, chunk.length - at);
        this.left -= take;
        at += take;
        if (this.left === 0) this.mode = 'size';
      } else {
        // 'size' or 'trailer': a CRLF-terminated line.
        const newline = chunk.indexOf(10, at);
        const part = chunk.toString('latin1', at, newline < 0 ? chunk.length : newline + 1);
        at = newline < 0 ? chunk.length : newline + 1;
        this.sizeLine += part;
        if (newline < 0) continue;
        const line = this.sizeLine.trim();
        this.sizeLine = '';
        if (this.mode === 'trailer') {
          if (line === '') this.mode = 'done';
        } else {
          const size = parseInt(line, 16);
          if (!Number.isFinite(size)) throw new Error(`bad chunk size line ${JSON.stringify(line)}`);
          this.left = size;
          this.mode = size === 0 ? 'trailer' : 'data';
        }
      }
    }
    if (this.mode === 'done') this.done({ status: this.status, bytes: this.bytes, head: this.head, firstByteAt: this.firstByteAt });
  }
}
