/**
 * The Asterisk AudioSocket listener (TCP, `KUMA_AUDIOSOCKET_PORT`, off by default): each connection is one
 * call, framed as AudioSocket TLV (carriers/audiosocket.ts), handled by the same call connection as the
 * WebSocket carriers. The socket is wrapped as a DuplexPeer: binary frames out are written to it; a close
 * ends it (after the hangup frame the connection sends).
 *
 * AudioSocket has no field for a token: a PBX is trusted by configuration instead. Every call on the
 * listener acts for the API key `KUMA_AUDIOSOCKET_API_KEY` (checked per call, so a revoked key stops new
 * calls) with the settings of `KUMA_AUDIOSOCKET_SETTINGS`. Bind it to the PBX's network
 * (`KUMA_AUDIOSOCKET_HOST`), not to the internet.
 */
import net from 'node:net';
import type { DuplexPeer, SendOutcome } from '../duplex/duplex-contract.js';
import type { Logger } from '../observability/logger.js';
import { createCarrierAdapter } from '../telephony/carriers/index.js';
import { callConnection, CallRefused, type CallGrant, type CallOpener } from '../telephony/call/call-connection.js';
import { randomBytes } from 'node:crypto';

/** Bytes waiting toward a PBX that does not read before the call is cut. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

export interface AudioSocketServerOptions {
  host: string;
  port: number;
  opener: CallOpener;
  /** The grant every call on this listener gets (the configured key's account, the configured settings). */
  grant(): Promise<CallGrant>;
  logger: Logger;
}

export interface AudioSocketServer {
  port: number;
  close(): Promise<void>;
}

export async function startAudioSocketServer(options: AudioSocketServerOptions): Promise<AudioSocketServer> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    void accept(options, socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as net.AddressInfo;
  options.logger.info({ port: address.port, host: options.host }, 'AudioSocket listener started');
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.end();
        server.close(() => resolve());
        setTimeout(() => {
          for (const socket of sockets) socket.destroy();
        }, 2000).unref();
      }),
  };
}

async function accept(options: AudioSocketServerOptions, socket: net.Socket): Promise<void> {
  socket.setNoDelay(true);
  const callId = `call_${randomBytes(12).toString('hex')}`;
  const peer = socketPeer(socket, callId);
  let grant: CallGrant;
  try {
    grant = await options.grant();
  } catch (err) {
    const reason = err instanceof CallRefused ? err.message : 'the call could not be authorised';
    options.logger.warn({ requestId: callId, reason }, 'AudioSocket call refused');
    // An AudioSocket error frame (kind 0xff) would need a code Asterisk knows; a hangup is what it understands.
    socket.end(Buffer.from([0x00, 0x00, 0x00]));
    return;
  }
  const handler = callConnection(options.opener, createCarrierAdapter('audiosocket'), callId, grant, peer);
  socket.on('data', (chunk: Buffer) => handler.onBinary(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length)));
  socket.on('close', () => handler.onClose(1000, 'socket closed'));
  socket.on('error', () => {}); // 'close' follows
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
    close() {
      if (!socket.destroyed) socket.end();
    },
    authenticated: () => {}, // a trusted PBX's listener: its calls are granted before they open
  };
}
