/**
 * The one registry of WebSocket close codes Kuma sends (RFC 6455 §7.4.1), and of the reasons it sends with
 * them, as src/api/errors.ts ERROR_CODES is for HTTP errors. Every `close(code, reason)` in src/ names its
 * code from here, so a client (and a reader) can look a close up in one place; docs/ARCHITECTURE.md has the
 * table of which reason goes with which code.
 *
 * A reason is ≤ 123 bytes of UTF-8 on the wire. The snake_case ones are machine-readable and documented in
 * the README; the few in plain words are older and kept as they are, since clients may match on them.
 */

export const CLOSE_CODES = {
  /** The session ended as it should (the client's `stop`, the input spoken, the call hung up by either side). */
  normal: 1000,
  /** The server is shutting down (after its grace period), or the call behind a link ended. */
  goingAway: 1001,
  /** A rule was broken: a revoked key, an empty balance, a bad or late token, a malformed frame, a silent reader. */
  policyViolation: 1008,
  /** A message over the route's bound. */
  messageTooBig: 1009,
  /** The server failed (a handler threw, a model or the store failed): nothing the client did. */
  internalError: 1011,
  /** The server is at capacity or a model is still loading: the same request may succeed later. */
  tryAgainLater: 1013,
} as const;

export type CloseCode = (typeof CLOSE_CODES)[keyof typeof CLOSE_CODES];

/**
 * Never sent (RFC 6455 forbids it in a close frame): what ws and uWS report for a connection that ended
 * without a close frame — one they dropped themselves (an oversized frame), or a peer that vanished.
 */
export const ABNORMAL_CLOSURE = 1006;

/** Reasons sent with a close, by the code they go with. */
export const CLOSE_REASONS = {
  // 1000
  /** A speech socket's input was spoken to its end. */
  done: 'done',
  /** A carrier's `stop` frame: the caller hung up. */
  stop: 'stop',
  /** A realtime session the client ended, or one whose last item was delivered. */
  sessionClosed: 'session closed',
  /** The call behind a control socket or a relay link ended. */
  callEnded: 'call ended',
  /** A relay link whose call ended because its key was revoked. */
  callEndedKeyRevoked: 'call ended: key_revoked',
  /** The server is shutting down: a call ends with this as its end reason (and its stream closes 1000 with it). */
  shutdown: 'shutdown',
  // 1001
  /** Sent to every socket still open when the shutdown grace period is over. */
  serverShuttingDown: 'server shutting down',
  // 1008
  /** The API key the session was opened with was revoked. */
  keyRevoked: 'key_revoked',
  /** The account's balance cannot pay for more. */
  insufficientQuota: 'insufficient_quota',
  /** A speech socket that received nothing for its inactivity timeout. */
  inputTimeoutExceeded: 'input_timeout_exceeded',
  /** A client with more queued toward it than the route's bound. */
  notReading: 'client is not reading',
  /** A carrier stream without a valid call token (or AudioSocket key). */
  invalidCallToken: 'invalid_call_token',
  /** A carrier stream that sent no `start` in time. */
  startTimeout: 'start_timeout',
  /** A carrier frame that is not that carrier's protocol. */
  malformedFrame: 'malformed_frame',
  /** The account already has its maximum of concurrent calls. */
  callLimit: 'call_limit',
  // 1009
  /** A carrier frame over the carrier bound. */
  frameTooBig: 'frame_too_big',
  // 1011
  /** A handler threw: the socket is closed, the process goes on. */
  internalError: 'internal error',
  /** A call that could not be started (a fault of the server's own). */
  serverError: 'server_error',
  /** The relay application could not be reached. */
  appUnreachable: 'app_unreachable',
} as const;

export type CloseReason = (typeof CLOSE_REASONS)[keyof typeof CLOSE_REASONS];

/** The reason sent with 1009 for a message over the transport's bound (it names the bound). */
export function messageTooBigReason(maxBytes: number): string {
  return `message too big (limit ${maxBytes} bytes)`;
}
