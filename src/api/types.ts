/**
 * The contract between the transport and the transport-neutral API layer: what a request looks like to
 * a handler, and what a handler returns (a whole body, or an async iterable the transport streams with
 * backpressure). Nothing here knows about uWebSockets.js.
 */
import type { ZodType } from 'zod';
import type { MultipartForm } from './uploads.js';
import type { FirstMessageAuth } from './first-message-auth.js';
import type { DuplexHandler, DuplexPeer } from '../duplex/duplex-contract.js';
import type { Caller } from '../auth/caller.js';

/** The caller a route's handler is given (auth defines it: src/auth/caller.ts). */

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RequestBody {
  /** The raw body as chunks. Can be consumed once. */
  chunks(): AsyncIterable<Uint8Array>;
  /** Reads and parses a JSON body within the configured size limit (400 invalid_json, 413, 415). */
  json(): Promise<unknown>;
  /** Parses a multipart/form-data body, spilling large files to disk (400, 413, 415). */
  multipart(): Promise<MultipartForm>;
}

export interface ApiRequest {
  method: HttpMethod;
  /** Path without the query string, as received. */
  path: string;
  /** Path parameters of the matched route, URL-decoded. */
  params: Record<string, string>;
  query: URLSearchParams;
  /** The query string exactly as received, without `?` (what a signature over the URL covers). */
  queryString: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  requestId: string;
  /** Fired when the client goes away or the server shuts down past its grace period. */
  signal: AbortSignal;
  body: RequestBody;
  /**
   * Headers the transport adds to whatever response this request gets — result, error, SSE or byte
   * stream — when its status line goes out (the rate-limit headers are set here once the key is known).
   */
  responseHeaders: Record<string, string>;
  /** Runs `callback` once when the response has ended, however it ended (sent, client gone, stream error). */
  onFinished(callback: () => void): void;
}

export interface SseMessage {
  event?: string;
  /** One payload line: a JSON document or the `[DONE]` sentinel. */
  data: string;
}

interface ResultBase {
  status?: number;
  headers?: Record<string, string>;
  /**
   * The charge of this response, settled on delivery: called exactly once when the response is over, with
   * `delivered` true only when it went out complete (a stream: to its end) and its last bytes were written to
   * the network — so a crash never leaves a charge for a response the client did not get. The route settles
   * (or, when false, releases) its reservation here. Must not throw. See api/charge-on-delivery.ts.
   */
  onDelivered?: (delivered: boolean) => Promise<void>;
}

export type ApiResult =
  | (ResultBase & { kind: 'json'; body: unknown })
  | (ResultBase & { kind: 'text'; body: string; contentType: string })
  | (ResultBase & StreamHeaders & { kind: 'sse'; events: AsyncIterable<SseMessage> })
  | (ResultBase & StreamHeaders & { kind: 'bytes'; contentType: string; chunks: AsyncIterable<Uint8Array> })
  | DuplexResult;

/**
 * A WebSocket session: what a route answers to an upgrade request once auth and validation passed. The
 * transport completes the upgrade (answering `protocol` as Sec-WebSocket-Protocol when set) and then calls
 * `open` once with the peer; the handler it returns receives the frames. A plain (non-upgrade) request to
 * such a route is answered 426 by the transport.
 */
export interface DuplexResult extends ResultBase {
  kind: 'duplex';
  /** The subprotocol chosen among those the client offered (e.g. `realtime`), if any. */
  protocol?: string;
  /**
   * The caller is not authenticated yet (a carrier stream whose token comes in its first message): the
   * socket counts against the server's caps on unauthenticated sockets (refused 429/503 before the upgrade
   * when they are full) and is held to their tighter bounds until the handler calls `peer.authenticated()`.
   */
  preAuth?: boolean;
  open(peer: DuplexPeer): DuplexHandler;
}

interface StreamHeaders {
  /** Headers known only once the first item exists (e.g. Server-Timing of the first chunk); read just before the status line goes out. */
  lateHeaders?: () => Record<string, string>;
  /**
   * With onDelivered: false sends each item as one HTTP chunk, as without a charge, and tells onDelivered
   * only whether the stream went out to its end — for streams charged by what was handed to the connection
   * (speech's tally), whose chunk boundaries may be part of their contract (native chunk_size). Default:
   * the end's delivery is confirmed (ResponseSink: each chunk ends with probes, split into HTTP chunks).
   */
  confirmDelivery?: boolean;
}

/**
 * Which family a route belongs to: its prefixes, its error body, its auth. `admin` routes authenticate with
 * admin keys inside their own handlers (src/api/admin/admin-route.ts), never with API keys: they set `auth: false`.
 */
export type Surface = 'compat' | 'native' | 'ops' | 'telephony' | 'admin';

/** One media type a documented response can have. */
export interface OpenApiContent {
  /** As the Content-Type is sent, or its essence alone where the transport adds parameters (charset). */
  contentType: string;
  /** The body's schema; for text/event-stream, the schema of one `data:` payload. None for opaque bytes. */
  schema?: ZodType;
  /** The `response_format` values answered with this media type (`x-response-formats` in the document). */
  responseFormats?: readonly string[];
}

export interface OpenApiResponse {
  description: string;
  content?: OpenApiContent[];
}

/**
 * How an operation appears in the OpenAPI document. The error statuses implied by the route's flags
 * (401 for auth, 402 for billable), by its request body (400, 413, 415) and by the transport (500, and 503
 * while shutting down) are added by the document builder; `errors` lists the operation's own.
 */
export interface OpenApiInfo {
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  request?: { contentType: 'application/json' | 'multipart/form-data'; schema: ZodType };
  responses: Record<number, OpenApiResponse>;
  errors?: number[];
  /** Marked `deprecated: true` in the document (the native routes). */
  deprecated?: boolean;
}

export interface RouteDef {
  method: HttpMethod;
  /** Pattern relative to the surface's prefix, `:name` marks a parameter: `/models/:model`. */
  path: string;
  surface: Surface;
  /** Unauthenticated routes (health, metrics, the OpenAPI document) set this to false. */
  auth: boolean;
  /**
   * Accepts a client secret (`ek_…`, src/auth/client-secrets.ts) in place of an API key: the realtime
   * WebSocket route and the speech sockets set this. Everywhere else a client secret is refused 401.
   */
  clientSecrets?: boolean;
  /**
   * Query parameters that may carry the credential when no header does (a browser's WebSocket cannot set
   * headers): the ElevenLabs speech sockets take `xi-api-key` and `authorization`.
   */
  keyQueryParameters?: string[];
  /**
   * An upgrade that carries no credential opens unauthenticated, and its first message must carry one
   * (ElevenLabs' `xi_api_key`): first-message-auth.ts. Refused 401 as usual on a plain HTTP request.
   */
  firstMessageAuth?: FirstMessageAuth;
  /** Routes that start billable work refuse accounts that cannot pay (402) before any work starts. */
  billable?: boolean;
  /** Runs before auth and may throw to refuse the request (a retired native route's 410, src/api/native/native-surface.ts). */
  gate?(req: ApiRequest): void;
  /** Every served route has one (the OpenAPI contract test checks it); only test probes go without. */
  openapi?: OpenApiInfo;
  /** A WebSocket route's own bound on what it buffers; routes without one get the transport's default. */
  websocket?: WebSocketRouteLimits;
  handler(req: ApiRequest, caller: Caller | null): Promise<ApiResult>;
}

/**
 * The bound a WebSocket route sets on one message (the transport gives the route its own uWS behaviour):
 * uWS drops a socket (1006) whose message is larger, as soon as the frame header says so, so no message
 * of the route ever costs more than this. Below it the route's handler refuses what it will not take.
 */
export interface WebSocketRouteLimits {
  maxPayloadBytes: number;
}

/** What the transport serves: a full path pattern and a handler that already did auth. */
export interface HttpRoute {
  method: HttpMethod;
  /** Full pattern, prefix included: `/openai/v1/models/:model`. Also the metrics label. */
  pattern: string;
  surface: Surface;
  /** The route's own WebSocket bound (RouteDef.websocket), the same object for every prefix. */
  websocket?: WebSocketRouteLimits;
  handle(req: ApiRequest): Promise<ApiResult>;
}

/** Surface prefixes: the primary surface answers identically under both (PROTOCOLS §1). */
export const SURFACE_PREFIXES: Record<Surface, string[]> = {
  compat: ['/compat/v1', '/openai/v1'],
  native: ['', '/api'],
  ops: [''],
  telephony: ['/telephony/v1'],
  admin: ['/admin/v1'],
};
