/**
 * The Asterisk AudioSocket listener (TCP, `KUMA_AUDIOSOCKET_PORT`, off by default): each connection is one
 * call, framed as AudioSocket TLV (audiosocket.ts), handled by the same call connection as the WebSocket
 * carriers. The listener speaks the duplex contract as the uWS transport does: the socket is wrapped as a
 * DuplexPeer (binary frames out are written to it; a close ends it, after the hangup frame the connection
 * sends), and the connection's DuplexHandler receives its bytes, its close and the server's shutdown.
 *
 * Shutdown follows the transport's WebSocket sessions (src/transport/websocket-sessions.ts): the listener
 * stops taking calls, tells every call (onShutdown: it ends as `shutdown` and hangs up), waits up to the
 * grace period for them to close, and only then cuts what is left.
 *
 * AudioSocket has no field for a token: a PBX is trusted by configuration instead. Every call on the
 * listener acts for the API key `KUMA_AUDIOSOCKET_API_KEY` (checked per call, so a revoked key stops new
 * calls) with the settings of `KUMA_AUDIOSOCKET_SETTINGS`. Bind it to the PBX's network
 * (`KUMA_AUDIOSOCKET_HOST`), not to the internet.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { CLOSE_CODES } from '../../duplex/close-codes.js';
import type { DuplexHandler, DuplexPeer, SendOutcome } from '../../duplex/duplex-contract.js';
import type { Logger } from '../../observability/logger.js';
import { callConnection, CallRefused, type CallGrant, type CallOpener } from '../call/call-connection.js';
import { AudioSocketKind, audioSocketFrame } from './audiosocket.js';
import { createCarrierAdapter } from './index.js';

/** Bytes waiting toward a PBX that does not read before the call is cut. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

/** What the handler is told when the TCP connection closes (TCP has no close code or reason of its own). */
const SOCKET_CLOSED = 'socket closed';

/** An AudioSocket error frame (kind 0xff) would need a code Asterisk knows; a hangup is what it understands. */
const HANGUP = audioSocketFrame(AudioSocketKind.hangup);

export interface AudioSocketListenerOptions {
  host: string;
  port: number;
  opener: CallOpener;
  /** The grant every call on this listener gets (the configured key's account, the configured settings). */
  grant(): Promise<CallGrant>;
  logger: Logger;
}

export interface AudioSocketListener {
  port: number;
  /**
   * Stops taking calls; tells each call in progress that the server is shutting down (it ends as
   * `shutdown`), waits up to `graceMs` for their connections to close, then closes the rest. Idempotent.
   */
  close(graceMs: number): Promise<void>;
}

/** One connection: its socket, and its handler once the call's grant came back. */
interface Connection {
  callId: string;
  socket: net.Socket;
  handler: DuplexHandler | null;
}

export async function startAudioSocketListener(options: AudioSocketListenerOptions): Promise<AudioSocketListener> {
  const open = new Set<Connection>();
  let shuttingDown = false;
  let allClosed: (() => void) | null = null;
  const server = net.createServer((socket) => {
    const connection: Connection = { callId: `call_${randomBytes(12).toString('hex')}`, socket, handler: null };
    open.add(connection);
    socket.on('close', () => {
      open.delete(connection);
      if (open.size === 0) allClosed?.();
    });
    void accept(options, connection, () => shuttingDown);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as net.AddressInfo;
  options.logger.info({ port: address.port, host: options.host }, 'AudioSocket listener started');

  let closing: Promise<void> | null = null;
  const shutdown = async (graceMs: number): Promise<void> => {
    shuttingDown = true;
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const connection of open) tellShutdown(options.logger, connection);
    if (open.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        allClosed = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    for (const { socket } of open) cut(socket);
    await stopped;
  };
  return {
    port: address.port,
    close: (graceMs) => (closing ??= shutdown(graceMs)),
  };
}

async function accept(options: AudioSocketListenerOptions, connection: Connection, shuttingDown: () => boolean): Promise<void> {
  const { socket, callId } = connection;
  socket.setNoDelay(true);
  socket.on('error', () => {}); // 'close' follows
  let grant: CallGrant;
  try {
    grant = await options.grant();
  } catch (err) {
    const reason = err instanceof CallRefused ? err.message : 'the call could not be authorised';
    options.logger.warn({ requestId: callId, reason }, 'AudioSocket call refused');
    socket.end(HANGUP);
    return;
  }
  if (socket.destroyed) return;
  // Granted while the server began to stop: the call is not taken (the listener cuts the connection at the grace's end).
  if (shuttingDown()) {
    socket.end(HANGUP);
    return;
  }
  const handler = callConnection(options.opener, createCarrierAdapter('audiosocket'), callId, grant, socketPeer(socket, callId));
  connection.handler = handler;
  socket.on('data', (chunk: Buffer) => {
    try {
      handler.onBinary(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
    } catch (err) {
      // As on the WebSocket transport: a handler that throws costs its own call, never the process.
      options.logger.error({ requestId: callId, err }, 'AudioSocket call handler threw');
      socket.destroy();
    }
  });
  socket.on('close', () => handler.onClose(CLOSE_CODES.normal, SOCKET_CLOSED));
}

/** Like a WebSocket session's handler, a call is told of the shutdown; one that throws costs its own call. */
function tellShutdown(logger: Logger, connection: Connection): void {
  try {
    connection.handler?.onShutdown?.();
  } catch (err) {
    logger.error({ requestId: connection.callId, err }, 'AudioSocket call onShutdown threw');
    connection.socket.destroy();
  }
}

/** The grace period is over: a last hangup frame, then the connection is closed whether or not the PBX reads. */
function cut(socket: net.Socket): void {
  if (socket.destroyed) return;
  if (socket.writable) socket.end(HANGUP);
  // Handed to the kernel at once unless the PBX stopped reading, in which case nothing more is owed to it.
  if (socket.writableLength > 0 || socket.writableFinished) socket.destroy();
  else socket.once('finish', () => socket.destroy());
}

function socketPeer(socket: net.Socket, requestId: string): DuplexPeer {
  const controller = new AbortController();
  socket.on('close', () => controller.abort());
  const outcome = (): SendOutcome => (socket.destroyed ? 'closed' : socket.writableLength > MAX_BUFFERED_BYTES ? 'backpressure' : 'sent');
  return {
    requestId,
    signal: controller.signal,
    sendText: () => 'closed', // AudioSocket is binary only
    sendBinary(bytes) {
      if (socket.destroyed) return 'closed';
      socket.write(bytes);
      if (socket.writableLength > MAX_BUFFERED_BYTES) socket.destroy();
      return outcome();
    },
    bufferedAmount: () => socket.writableLength,
    drained: () => new Promise((resolve) => (socket.writableLength === 0 || socket.destroyed ? resolve() : socket.once('drain', () => resolve()))),
    // An empty write's callback runs once every earlier write was handed to the kernel (writes complete in order).
    flushed: () => new Promise((resolve) => (socket.destroyed ? resolve(false) : socket.write(new Uint8Array(0), (err) => resolve(!err && !socket.destroyed)))),
    // TCP carries no close code: the call connection has already sent the hangup frame that says the call is over.
    close() {
      if (!socket.destroyed) socket.end();
    },
    authenticated: () => {}, // a trusted PBX's listener: its calls are granted before they open
  };
}
