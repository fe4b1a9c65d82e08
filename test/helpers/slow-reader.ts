/**
 * A raw-socket HTTP client that stops reading: it sends a request, reads until the response head and at
 * least `readBytes` of the body have arrived, then pauses the socket (the kernel's buffers fill and the
 * server meets backpressure). `resume()` reads everything else until the server closes, and `body()` is the
 * body received, de-chunked (a response cut mid-chunk keeps the bytes that arrived).
 */
import net from 'node:net';

export interface SlowReader {
  status: number;
  headers: string;
  /** Resumes reading and resolves when the connection has closed. */
  finish(): Promise<void>;
  /** Body bytes received so far (transfer coding removed). */
  body(): Buffer;
  destroy(): void;
}

export function openSlowReader(port: number, path: string, headers: Record<string, string>, body: string, readBytes = 1): Promise<SlowReader> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let raw = Buffer.alloc(0);
    let closed = false;
    let onClosed: (() => void) | null = null;
    let settled = false;
    socket.on('error', (err) => {
      if (!settled) reject(err);
    });
    socket.on('close', () => {
      closed = true;
      onClosed?.();
      if (!settled) reject(new Error(`closed before the response head: ${raw.toString('latin1').slice(0, 200)}`));
    });
    socket.on('data', (chunk: Buffer) => {
      raw = Buffer.concat([raw, chunk]);
      if (settled) return;
      const end = raw.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = raw.subarray(0, end).toString('latin1');
      const status = Number(head.split(' ')[1]);
      const chunked = /transfer-encoding:\s*chunked/i.test(head);
      const bodyNow = () => (chunked ? dechunk(raw.subarray(end + 4)) : raw.subarray(end + 4));
      // An error answer arrives whole: hand it over as it is.
      if (status === 200 && bodyNow().length < readBytes) return;
      settled = true;
      socket.pause();
      resolve({
        status,
        headers: head,
        body: bodyNow,
        finish: () =>
          new Promise<void>((done) => {
            if (closed) return done();
            onClosed = done;
            socket.resume();
          }),
        destroy: () => socket.destroy(),
      });
    });
    const payload = Buffer.from(body);
    const lines = [`POST ${path} HTTP/1.1`, 'Host: x', `content-length: ${payload.length}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    socket.write(payload);
  });
}

/** Removes HTTP/1.1 chunked framing; a truncated last chunk keeps the bytes that arrived. */
export function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(data.subarray(lineEnd + 2, Math.min(data.length, lineEnd + 2 + size)));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
