/**
 * The relay's domain errors, free of HTTP: the call core decides what each means for the call (a bad app
 * message is answered with an `error` message and the call goes on; a link that cannot open ends the call
 * with a clear reason; a `play` source that cannot be fetched is reported to the app). Only src/api/ maps
 * errors to HTTP, and none of these reaches an HTTP client directly.
 */

export type RelayMessageErrorCode =
  /** The frame is not JSON, or not a JSON object. */
  | 'invalid_json'
  /** The object has no string `type`, or a `type` ConversationRelay does not define. */
  | 'unknown_type'
  /** A known message with a missing or mistyped field. */
  | 'invalid_message'
  /** A binary frame, or a frame too large to be a ConversationRelay message. */
  | 'unsupported_frame';

/** A message from the application that Kuma cannot act on. The link answers it with `error` and goes on. */
export class RelayMessageError extends Error {
  constructor(
    readonly code: RelayMessageErrorCode,
    message: string,
    /** The field at fault, dotted (`loop`), if one is. */
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'RelayMessageError';
  }
}

export type RelayLinkErrorCode =
  /** The URL is not an absolute ws:// or wss:// URL. */
  | 'invalid_url'
  /** The injected allow-list check refused the URL; no connection was attempted. */
  | 'not_allowed'
  /** The application did not complete the WebSocket upgrade in time. */
  | 'connect_timeout'
  /** The connection failed (refused, reset, TLS) or the application answered the upgrade with an HTTP status. */
  | 'connect_failed'
  /** The caller's signal fired before the link opened. */
  | 'aborted';

/** The link to the application could not be opened. */
export class RelayLinkError extends Error {
  constructor(
    readonly code: RelayLinkErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RelayLinkError';
  }
}

export type PlaySourceErrorCode = 'invalid_url' | 'not_allowed' | 'timeout' | 'too_large' | 'http_status' | 'too_many_redirects' | 'fetch_failed' | 'aborted';

/** A `play` source that could not be fetched; `message` is safe to send to the application. */
export class PlaySourceError extends Error {
  constructor(
    readonly code: PlaySourceErrorCode,
    message: string,
    /** The HTTP status for `http_status`. */
    readonly status: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PlaySourceError';
  }
}
