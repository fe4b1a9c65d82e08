/**
 * The contract between the transport and the transport-neutral API layer: what a request looks like to
 * a handler, and what a handler returns (a whole body, or an async iterable the transport streams with
 * backpressure). Nothing here knows about uWebSockets.js.
 */
import type { ZodType } from 'zod';
import type { MultipartForm } from './uploads.js';
import type { Account, ApiKeyRecord } from '../store/store.js';

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
  /** Lower-cased header names. */
  headers: Record<string, string>;
  requestId: string;
  /** Fired when the client goes away or the server shuts down past its grace period. */
  signal: AbortSignal;
  body: RequestBody;
}

export interface SseMessage {
  event?: string;
  /** One payload line: a JSON document or the `[DONE]` sentinel. */
  data: string;
}

interface ResultBase {
  status?: number;
  headers?: Record<string, string>;
}

export type ApiResult =
  | (ResultBase & { kind: 'json'; body: unknown })
  | (ResultBase & { kind: 'text'; body: string; contentType: string })
  | (ResultBase & StreamHeaders & { kind: 'sse'; events: AsyncIterable<SseMessage> })
  | (ResultBase & StreamHeaders & { kind: 'bytes'; contentType: string; chunks: AsyncIterable<Uint8Array> });

interface StreamHeaders {
  /** Headers known only once the first item exists (e.g. Server-Timing of the first chunk); read just before the status line goes out. */
  lateHeaders?: () => Record<string, string>;
}

export type Surface = 'compat' | 'native' | 'ops';

export interface OpenApiInfo {
  operationId: string;
  summary: string;
  tags?: string[];
  request?: { contentType: string; schema: ZodType };
  responses: Record<number, { description: string; contentType?: string; schema?: ZodType }>;
}

export interface RouteDef {
  method: HttpMethod;
  /** Pattern relative to the surface's prefix, `:name` marks a parameter: `/models/:model`. */
  path: string;
  surface: Surface;
  /** Unauthenticated routes (health, metrics, the OpenAPI document) set this to false. */
  auth: boolean;
  /** Routes that start billable work refuse accounts that cannot pay (402) before any work starts. */
  billable?: boolean;
  openapi?: OpenApiInfo;
  handler(req: ApiRequest, caller: Caller | null): Promise<ApiResult>;
}

/** The authenticated account and key behind a request. */
export interface Caller {
  account: Account;
  key: ApiKeyRecord;
}

/** What the transport serves: a full path pattern and a handler that already did auth. */
export interface HttpRoute {
  method: HttpMethod;
  /** Full pattern, prefix included: `/openai/v1/models/:model`. Also the metrics label. */
  pattern: string;
  surface: Surface;
  handle(req: ApiRequest): Promise<ApiResult>;
}

/** Surface prefixes: the primary surface answers identically under both (PROTOCOLS §1). */
export const SURFACE_PREFIXES: Record<Surface, string[]> = {
  compat: ['/compat/v1', '/openai/v1'],
  native: ['', '/api'],
  ops: [''],
};
