/**
 * The session worker's two WebSocket clients behind one small interface, so one run can compare what each
 * costs the generator: `raw` (raw-websocket.ts: every append frame of the cycle built and masked once, sent
 * as the same bytes on every connection) and `ws` (the `ws` package, masking each frame as it sends it).
 */
import crypto from 'node:crypto';
import WebSocket from 'ws';
import { RawWebSocket } from './raw-websocket.js';
import { OPCODE, clientFrame } from './websocket-frames.js';

export type ClientKind = 'raw' | 'ws';
export const CLIENT_KINDS: readonly ClientKind[] = ['raw', 'ws'];

export interface SessionSocketHandlers {
  onText(text: string): void;
  onError(message: string): void;
  /** The connection is gone (after a close handshake, an error or a drop). */
  onClose(): void;
}

export interface SessionSocket {
  /** Sends frames[first], frames[first+1], … (count of them, wrapping round the cycle). */
  sendFrames(first: number, count: number): void;
  sendText(text: string): void;
  close(): void;
}

export type SessionSocketFactory = (handlers: SessionSocketHandlers) => SessionSocket;

/** Prepares a client kind for one worker's sessions: the raw client builds the cycle's frames here, once. */
export function sessionSocketFactory(kind: ClientKind, url: string, apiKey: string, frames: string[]): SessionSocketFactory {
  const headers = { authorization: `Bearer ${apiKey}` };
  if (kind === 'ws') {
    return (handlers) => {
      const socket = new WebSocket(url, { headers });
      socket.on('message', (data) => handlers.onText(data.toString()));
      socket.on('error', (err) => handlers.onError(err.message));
      socket.on('close', () => handlers.onClose());
      return {
        sendFrames(first, count) {
          for (let i = 0; i < count; i++) socket.send(frames[(first + i) % frames.length]!);
        },
        sendText: (text) => socket.send(text),
        close: () => socket.close(1000),
      };
    };
  }
  const mask = crypto.randomBytes(4);
  const prebuilt = frames.map((text) => clientFrame(OPCODE.text, Buffer.from(text, 'utf8'), mask));
  return (handlers) => {
    const socket = new RawWebSocket(
      url,
      { headers, mask },
      { onText: handlers.onText, onError: (err) => handlers.onError(err.message), onClose: () => handlers.onClose() },
    );
    return {
      sendFrames(first, count) {
        if (count === 1) socket.sendFrame(prebuilt[first % prebuilt.length]!);
        else socket.sendFrames(Array.from({ length: count }, (_, i) => prebuilt[(first + i) % prebuilt.length]!));
      },
      sendText: (text) => socket.sendText(text),
      close: () => socket.close(1000),
    };
  };
}
