/**
 * WebSocket clients that misbehave on purpose, on a bare TCP socket (the `ws` package would not): an upgrade
 * from a chosen local address (127.0.0.x, so caps per address can be tested on one machine), the header of
 * a huge frame without its payload, and floods of pings from a client that never reads. Shared by the
 * pre-auth tests, the `ws-preauth` fuzz target and load-tests/hostile.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import { clientFrame, OPCODE } from '../../load-tests/realtime/websocket-frames.js';

export interface RawUpgrade {
  socket: net.Socket;
  /** The answer's status: 101 when upgraded. */
  status: number;
  /** The answer's head (status line and headers); for a refusal, its body follows in `body`. */
  head: string;
  body: string;
}

/**
 * Sends a WebSocket handshake for `path` and resolves once the answer's head (and, for a refusal, its body up
 * to the close or 500 ms) has arrived. The socket is left open, reading paused after a 101.
 */
export function rawUpgrade(
  port: number,
  path: string,
  options: { localAddress?: string; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<RawUpgrade> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: options.localAddress });
    let bytes = Buffer.alloc(0);
    let settled = false;
    const timer = setTimeout(() => fail(new Error(`no answer to the upgrade of ${path}`)), options.timeoutMs ?? 10_000);
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    const answer = (closed: boolean) => {
      const end = bytes.indexOf('\r\n\r\n');
      if (end < 0) return closed ? fail(new Error(`the server closed the upgrade of ${path} without an answer`)) : undefined;
      const head = bytes.subarray(0, end).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      const length = Number(/^content-length: (\d+)/im.exec(head)?.[1] ?? 0);
      const body = bytes.subarray(end + 4);
      if (status !== 101 && !closed && body.length < length) return; // the refusal's body is still coming
      settled = true;
      clearTimeout(timer);
      socket.off('data', onData);
      if (status === 101) socket.pause();
      resolve({ socket, status, head, body: body.toString('utf8') });
    };
    const onData = (chunk: Buffer) => {
      bytes = Buffer.concat([bytes, chunk]);
      answer(false);
    };
    socket.on('data', onData);
    socket.on('error', (err) => fail(err));
    socket.on('close', () => settled || answer(true));
    socket.on('connect', () => {
      const extra = Object.entries(options.headers ?? {})
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: kuma\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${crypto.randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`,
      );
    });
  });
}

const MASK = Buffer.from([0x1f, 0x2e, 0x3d, 0x4c]);

/** The header of a masked binary frame announcing `length` payload bytes (none of which follow). */
export function hugeFrameHeader(length: number): Buffer {
  const header = Buffer.alloc(14);
  header[0] = 0x80 | OPCODE.binary;
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(length), 2);
  MASK.copy(header, 10);
  return header;
}

/** A whole masked frame (what a conforming client sends). */
export const maskedFrame = (opcode: number, payload: Buffer): Buffer => clientFrame(opcode, payload, MASK);

/** `count` pings of 125 bytes each (the largest a control frame may carry), in one buffer. */
export function pings(count: number): Buffer {
  return Buffer.concat(Array.from({ length: count }, () => maskedFrame(OPCODE.ping, Buffer.alloc(125, 0x70))));
}

/**
 * Writes `total` bytes of pings to a socket that never reads what comes back, as fast as the socket takes
 * them; resolves with the bytes written when done or when the server closed the connection.
 */
export async function floodPings(socket: net.Socket, total: number): Promise<number> {
  const burst = pings(512);
  let written = 0;
  let closed = false;
  socket.once('close', () => (closed = true));
  socket.on('error', () => (closed = true));
  while (written < total && !closed && !socket.destroyed) {
    written += burst.length;
    if (!socket.write(burst)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          socket.off('drain', done);
          socket.off('close', done);
          resolve();
        };
        socket.once('drain', done);
        socket.once('close', done);
      });
    }
  }
  return written;
}

/** Resolves when the server has closed the connection (EOF or reset), reading (and dropping) what it sent; false after `timeoutMs`. */
export function serverCloses(socket: net.Socket, timeoutMs: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
    socket.resume();
  });
}
