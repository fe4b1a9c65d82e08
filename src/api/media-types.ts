/**
 * Content-Types the API layer chooses for whole text bodies and that the OpenAPI document names. The
 * transport sets its own for JSON (`application/json`) and SSE (`text/event-stream; charset=utf-8`); the
 * document names those by their essence, which matches whatever parameters the transport adds.
 */
export const MEDIA_TYPES = {
  json: 'application/json',
  eventStream: 'text/event-stream',
  /** `text` and `srt` transcripts: SDKs return non-JSON bodies as strings, so these must never say JSON. */
  plainText: 'text/plain; charset=utf-8',
  /** WebVTT's registered type; browsers' <track> elements require it. */
  vtt: 'text/vtt; charset=utf-8',
} as const;
