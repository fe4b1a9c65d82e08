/**
 * The realtime session core's errors, free of HTTP and WebSocket: src/api/realtime maps them to `error`
 * events (the session goes on) or to `….failed` for one item.
 */

/** Codes a client can act on; the API layer sends them as the error event's `code`. */
export type RealtimeInputErrorCode =
  | 'invalid_value'
  | 'input_audio_buffer_commit_empty'
  | 'session_not_configured'
  | 'unsupported_audio_format'
  | 'session_closed'
  /** Audio arriving faster than the session's input rate bound (input-rate.ts): the append was not taken. */
  | 'input_audio_rate_exceeded';

/** A client event the session cannot act on. The session state is unchanged and it goes on. */
export class RealtimeInputError extends Error {
  constructor(
    readonly code: RealtimeInputErrorCode,
    message: string,
    /** The field of the client event at fault, dotted (`session.audio.input.format`), if any. */
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'RealtimeInputError';
  }
}
