/**
 * A WebSocket whose credential comes in its first message (ElevenLabs' `xi_api_key`): a browser cannot set
 * headers, and a key in its URL ends up in proxies' logs. Such an upgrade opens unauthenticated
 * (DuplexResult.preAuth: it counts against the server's caps on unauthenticated sockets, 429/503 at the
 * upgrade when they are full, and is held to their tighter output bound) and this gate stands in for the
 * route's handler until the first message has been checked:
 *
 * - the first message must come within FIRST_MESSAGE_TIMEOUT_MS and carry a credential, else the socket is
 *   refused (an error message in the route's shape, then close 1008);
 * - while the credential is checked (the key lookup, limits, balance, the key's session cap — the checks of
 *   an upgrade, route-auth.ts), at most MAX_HELD_FRAMES messages / MAX_HELD_BYTES are held, the first one
 *   included; a client that sends more is refused rather than held;
 * - once it checks out the route's own session opens, its place under the pre-auth caps is given back, and
 *   it gets the held messages (the first one too: its text is input like any other) in order.
 */
import { ApiError, toApiError } from './errors.js';
import type { DuplexResult } from './types.js';
import type { DuplexHandler, DuplexPeer } from '../duplex/duplex-contract.js';
import { CLOSE_CODES, type CloseCode } from '../duplex/close-codes.js';

/** What a route that takes a credential in its first message provides. */
export interface FirstMessageAuth {
  /** The credential a first message carries, or undefined. */
  credential(frame: string): string | undefined;
  /** The message that tells the client why its socket is refused, in the route's own shape (close 1008 follows). */
  refusal(err: ApiError, closeCode: CloseCode): string;
}

/** The late checks: the route's session for this credential, or a throw (the ApiError to report). */
export type LateAuthorization = (credential: string) => Promise<{ session: DuplexResult; abandon: () => Promise<void> }>;

export const FIRST_MESSAGE_TIMEOUT_MS = 10_000;
export const MAX_HELD_FRAMES = 16;
export const MAX_HELD_BYTES = 64 * 1024;

export function firstMessageSession(spec: FirstMessageAuth, protocol: string | undefined, authorize: LateAuthorization): DuplexResult {
  return { kind: 'duplex', preAuth: true, ...(protocol ? { protocol } : {}), open: (peer) => new FirstMessageGate(peer, spec, authorize) };
}

type State = 'waiting' | 'authorizing' | 'open' | 'closed';

class FirstMessageGate implements DuplexHandler {
  private state: State = 'waiting';
  private inner: DuplexHandler | null = null;
  private held: Array<string | Uint8Array> = [];
  private heldBytes = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly peer: DuplexPeer,
    private readonly spec: FirstMessageAuth,
    private readonly authorize: LateAuthorization,
  ) {
    this.timer = setTimeout(
      () =>
        this.refuse(
          new ApiError(
            'invalid_api_key',
            `No credential within ${FIRST_MESSAGE_TIMEOUT_MS / 1000} s: send the API key (or an ek_ client secret) as "xi_api_key" in the first message, or with the upgrade.`,
          ),
        ),
      FIRST_MESSAGE_TIMEOUT_MS,
    );
    this.timer.unref();
  }

  onText(text: string): void {
    this.frame(text);
  }

  onBinary(bytes: Uint8Array): void {
    this.frame(bytes);
  }

  onClose(code: number, reason: string): void {
    const wasOpen = this.state === 'open';
    this.state = 'closed';
    this.held = [];
    clearTimeout(this.timer);
    if (wasOpen) this.inner!.onClose(code, reason);
  }

  onShutdown(): void {
    if (this.state === 'open') this.inner!.onShutdown?.();
    else this.refuse(new ApiError('service_unavailable', 'The server is shutting down: connect again.'));
  }

  private frame(frame: string | Uint8Array): void {
    if (this.state === 'open') return typeof frame === 'string' ? this.inner!.onText(frame) : this.inner!.onBinary(frame);
    if (this.state === 'closed') return;
    if (this.state === 'authorizing') return this.hold(frame);
    clearTimeout(this.timer);
    const credential = typeof frame === 'string' ? this.spec.credential(frame) : undefined;
    if (!credential) {
      return this.refuse(
        new ApiError(
          'invalid_api_key',
          'No API key: give it with the upgrade (xi-api-key or Authorization header, ?xi-api-key=, a subprotocol) or as "xi_api_key" in the first message.',
        ),
      );
    }
    this.state = 'authorizing';
    this.hold(frame);
    void this.open(credential);
  }

  private hold(frame: string | Uint8Array): void {
    this.heldBytes += typeof frame === 'string' ? Buffer.byteLength(frame) : frame.byteLength;
    this.held.push(frame);
    if (this.held.length > MAX_HELD_FRAMES || this.heldBytes > MAX_HELD_BYTES) {
      this.refuse(
        new ApiError(
          'invalid_request',
          `More than ${MAX_HELD_FRAMES} messages or ${MAX_HELD_BYTES} bytes were sent before the credential was checked: wait for audio before sending more.`,
        ),
      );
    }
  }

  private async open(credential: string): Promise<void> {
    let authorized;
    try {
      authorized = await this.authorize(credential);
    } catch (err) {
      return this.refuse(toApiError(err));
    }
    if (this.state !== 'authorizing') {
      // Closed (or refused) while the credential was checked: the session never opens.
      await authorized.abandon();
      return;
    }
    this.inner = authorized.session.open(this.peer);
    this.peer.authenticated();
    this.state = 'open';
    const held = this.held;
    this.held = [];
    for (const frame of held) {
      if (this.state !== 'open') break;
      if (typeof frame === 'string') this.inner.onText(frame);
      else this.inner.onBinary(frame);
    }
  }

  private refuse(err: ApiError): void {
    if (this.state === 'closed' || this.state === 'open') return;
    this.state = 'closed';
    this.held = [];
    clearTimeout(this.timer);
    this.peer.sendText(this.spec.refusal(err, CLOSE_CODES.policyViolation));
    this.peer.close(CLOSE_CODES.policyViolation, err.code);
  }
}
