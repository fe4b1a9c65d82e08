/**
 * The duplex contract: a two-way message session as its handler sees it, whatever carries it — a WebSocket
 * through the uWS transport (src/transport/websocket-peer.ts), or the AudioSocket TCP listener
 * (src/telephony/carriers/audiosocket-listener.ts). A session's owner (an API route, the call connection)
 * writes to a DuplexPeer and receives frames as a DuplexHandler. It sits on the ground floor so that the
 * domains can speak it without knowing the API or the transport; nothing here knows about uWebSockets.js.
 */
import type { CloseCode } from './close-codes.js';

/** How a send went: on its way, queued past the transport's high-water mark (await `drained()`), or the socket is gone. */
export type SendOutcome = 'sent' | 'backpressure' | 'closed';

/** The open session as a duplex handler sees it. */
export interface DuplexPeer {
  readonly requestId: string;
  /** Aborted once the socket has closed, for whatever reason (the client, `close()`, server shutdown). */
  readonly signal: AbortSignal;
  sendText(text: string): SendOutcome;
  sendBinary(bytes: Uint8Array): SendOutcome;
  /** Bytes queued toward the client and not yet written to the network. */
  bufferedAmount(): number;
  /** Resolves once `bufferedAmount()` is back under the transport's low-water mark, or the socket closed. */
  drained(): Promise<void>;
  /**
   * Resolves true once everything sent so far has left this process (written to the network: a crash now
   * would not lose it), false when the socket closed first. What a charge for delivered output waits for.
   */
  flushed(): Promise<boolean>;
  /** Closes with a code of the registry (src/duplex/close-codes.ts) and a reason of ≤ 123 bytes. */
  close(code: CloseCode, reason: string): void;
  /** The caller of a `preAuth` socket is now known: its place under the unauthenticated caps is given back (a no-op otherwise). */
  authenticated(): void;
}

/**
 * Receives a session's frames, in order. A handler that throws costs its own socket (closed 1011), never
 * the process. `onClose` is called exactly once, after which the peer's sends answer 'closed'.
 */
export interface DuplexHandler {
  /** A text frame, UTF-8 decoded. */
  onText(text: string): void;
  /** A binary frame, already copied out of the transport's buffer. */
  onBinary(bytes: Uint8Array): void;
  /** The code is the peer's own (any number, 1006 when the connection dropped without a close frame). */
  onClose(code: number, reason: string): void;
  /** The server is shutting down: finish the current item if you can; the transport closes with 1001 after its grace period. */
  onShutdown?(): void;
  /**
   * The API key the session was opened with (or that minted its client secret) has been revoked: end now,
   * telling the client why (close 1008 `key_revoked`). Without this hook the socket is closed 1008 `key_revoked`.
   */
  onKeyRevoked?(): void;
}
