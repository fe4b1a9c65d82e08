/**
 * A minimal RFC 6455 WebSocket client for load-tests/realtime's session worker, cheaper per frame sent than
 * the `ws` package — the generator shares the machine's cores with the server under test, so every µs it
 * spends on a frame is taken from the server.
 *
 * Why it is cheap: a client must mask every frame (RFC 6455 §5.3), and `ws` draws a random key and masks
 * each frame as it sends it (plus a string → Buffer copy and a frame header). Here the generator draws one
 * masking key per run and builds every append frame of the audio cycle once, masked, up front
 * (`clientFrame`); the same bytes serve every connection, so sending a frame is one `socket.write(prebuilt)`.
 * A fixed key gives up nothing that matters here: per-frame keys exist so that script in a browser cannot
 * choose the bytes an intermediary proxy sees (cache poisoning); this client talks to its own test server.
 *
 * The handshake goes through `node:http` (as `ws` does): it checks the 101 and Sec-WebSocket-Accept, then
 * keeps the bare TCP socket. Incoming frames go through FrameReader (websocket-frames.ts): text messages to
 * `onText`, pings answered with a pong carrying the same payload, the close handshake either way.
 *
 * Measured with `npm run bench:realtime:generator` (500 sessions = 25 000 frames/s to a sink that parses
 * nothing; this process's CPU ÷ frames; 2-core machine shared with other jobs, so noisy, direction only):
 * raw 10.7–13.7 µs per frame (0.33 cores), `ws` 18.3–20.0 µs (0.47 cores), ws/raw 1.39–1.58 over three runs.
 * About 60 % of what is left is the kernel's loopback TCP send: one `write` syscall per frame is the floor
 * at this pacing.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { Socket } from 'node:net';
import { FrameReader, OPCODE, WebSocketProtocolError, clientFrame } from './websocket-frames.js';

const ACCEPT_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** How long a close we started waits for the server's close frame before dropping the TCP connection. */
const CLOSE_WAIT_MS = 2000;

export interface RawWebSocketHandlers {
  /** The 101 arrived and its Sec-WebSocket-Accept is right. */
  onOpen?(): void;
  onText(text: string): void;
  /** Failed handshake, socket error or protocol violation; onClose follows when a socket was opened. */
  onError(err: Error): void;
  /** Once, when the TCP connection is gone: the server's close code, or 1006 when it sent none. */
  onClose(code: number, reason: string): void;
  /** Every byte read after the handshake, as it came (tests record the server's frame stream with it). */
  onData?(chunk: Buffer): void;
}

export interface RawWebSocketOptions {
  headers?: Record<string, string>;
  /** The run's masking key (4 bytes) for frames built here (sendText, pong, close). */
  mask: Buffer;
}

export class RawWebSocket {
  private socket: Socket | null = null;
  private closeSent = false;
  private closeCode = 1006;
  private closeReason = '';
  private closeTimer: NodeJS.Timeout | null = null;

  /** Connects at once (like `ws`): handlers are in place before the first event can arrive. */
  constructor(
    url: string,
    private readonly options: RawWebSocketOptions,
    private readonly handlers: RawWebSocketHandlers,
  ) {
    const target = new URL(url);
    if (target.protocol !== 'ws:') throw new Error(`RawWebSocket speaks ws:// only, not ${target.protocol}`);
    const key = crypto.randomBytes(16).toString('base64');
    const request = http.request({
      host: target.hostname,
      port: target.port || 80,
      path: target.pathname + target.search,
      headers: { ...options.headers, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': key },
    });
    request.once('upgrade', (response, socket, head) => {
      const expected = crypto
        .createHash('sha1')
        .update(key + ACCEPT_GUID)
        .digest('base64');
      if (response.statusCode !== 101 || response.headers['sec-websocket-accept'] !== expected) {
        socket.destroy();
        return handlers.onError(new Error(`bad upgrade answer: ${response.statusCode}, accept ${response.headers['sec-websocket-accept']}`));
      }
      this.attach(socket, head);
    });
    request.once('response', (response) => {
      response.resume();
      handlers.onError(new Error(`upgrade refused: ${response.statusCode}`));
    });
    request.once('error', (err) => handlers.onError(err));
    request.end();
  }

  get isOpen(): boolean {
    return this.socket !== null && !this.closeSent && !this.socket.destroyed;
  }

  /** Sends a frame built by `clientFrame` (masked, final); false once closing, as nothing goes out then. */
  sendFrame(frame: Buffer): boolean {
    if (!this.isOpen) return false;
    this.socket!.write(frame);
    return true;
  }

  /** Several frames in one write (one syscall) — a session catching up after a late tick. */
  sendFrames(frames: Buffer[]): boolean {
    if (!this.isOpen) return false;
    this.socket!.cork();
    for (const frame of frames) this.socket!.write(frame);
    this.socket!.uncork();
    return true;
  }

  sendText(text: string): boolean {
    return this.sendFrame(clientFrame(OPCODE.text, Buffer.from(text, 'utf8'), this.options.mask));
  }

  /** Starts the close handshake; the socket ends when the server's close frame arrives (or after CLOSE_WAIT_MS). */
  close(code = 1000, reason = ''): void {
    if (!this.socket || this.closeSent || this.socket.destroyed) return;
    this.sendClose(code, reason);
    this.closeTimer = setTimeout(() => this.socket?.destroy(), CLOSE_WAIT_MS);
  }

  private attach(socket: Socket, head: Buffer): void {
    this.socket = socket;
    socket.setNoDelay(true); // frames are small and paced: Nagle would hold one back for the previous one's ACK
    const reader = new FrameReader({
      message: (opcode, payload) => {
        if (opcode === OPCODE.text) this.handlers.onText(payload.toString('utf8'));
      },
      ping: (payload) => {
        if (!this.closeSent) socket.write(clientFrame(OPCODE.pong, payload, this.options.mask));
      },
      close: (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason;
        // Echo the close (RFC 6455 §5.5.1) unless ours is already out; either way the handshake is complete.
        if (!this.closeSent) this.sendClose(code === 1005 ? 1000 : code, '');
        socket.end();
      },
    });
    const read = (chunk: Buffer) => {
      this.handlers.onData?.(chunk);
      try {
        reader.push(chunk);
      } catch (err) {
        if (!(err instanceof WebSocketProtocolError)) throw err;
        this.handlers.onError(err);
        this.sendClose(1002, '');
        socket.destroy();
      }
    };
    socket.on('data', read);
    socket.on('error', (err) => this.handlers.onError(err));
    socket.once('close', () => {
      if (this.closeTimer) clearTimeout(this.closeTimer);
      this.handlers.onClose(this.closeCode, this.closeReason);
    });
    this.handlers.onOpen?.();
    if (head.length > 0) read(head); // the first event can share the packet with the 101
  }

  private sendClose(code: number, reason: string): void {
    if (this.closeSent || !this.socket || this.socket.destroyed) return;
    this.closeSent = true;
    const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
    payload.writeUInt16BE(code, 0);
    payload.write(reason, 2);
    this.socket.write(clientFrame(OPCODE.close, payload, this.options.mask));
  }
}
