/**
 * What the fuzz counts as a pass or a failure, per case, in one place:
 * - pass: a 2xx; a 4xx whose body is the error shape of the surface asked (`ErrorShape`): the OpenAI
 *   envelope {"error":{message,type,param,code}} on the primary surface, `{"detail": string | entries[]}` on
 *   the native one (README "Native surface"; 410 endpoint_retired is the envelope with `detail` beside it);
 *   a 4xx the transport writes before any route — uWS refusing a request line — may have no body (raw target);
 *   a 503 with Retry-After (overload is the server protecting itself, not an application failure; counted
 *   apart); for raw HTTP, the connection closed without an answer, or uWS's own HTML refusal of a request
 *   its parser rejects before any route runs (400 Bad Request, 431, 505 for a version other than
 *   HTTP/1.1) — counted apart as `closed` and `refused`: the application never saw those requests.
 * - failure: any other 5xx (`5xx`), a 4xx without the envelope (`bad-envelope`), no answer and no close
 *   within the per-case timeout (`hang`), a JSON/multipart request that got no HTTP answer at all
 *   (`no-answer`), the server process gone (`death`).
 */
export type OutcomeKind =
  '2xx' | '4xx' | '503' | 'closed' | 'refused' | '5xx' | 'bad-envelope' | 'hang' | 'no-answer' | 'death' | WsOutcomeKind | 'error-logged' | 'smuggled';

/**
 * WebSocket cases (ws-targets.ts, ws-carrier-target.ts). An upgrade the server refuses is an HTTP answer and
 * is classified as one (4xx with the envelope, …). Once open, every case ends with a probe the server must
 * answer — an in-band reply (an `error` event naming the probe) or a close — so a connection whose handler
 * stopped working shows up as a hang rather than as a quiet pass.
 * - pass: `ws-answered` (the probe was answered; the case then closed the socket with 1000), `ws-closed`
 *   (the server closed with a documented code: 1000, 1001, 1008, 1009, 1013 overload, 4000–4999, or 1011
 *   `app_unreachable` on a carrier stream, a relay app that cannot be reached being the app's failure),
 *   `ws-dropped` (no close frame, 1006, after the case sent text that is not UTF-8, or a message over its
 *   route's bound — a carrier frame over 128 KiB: uWS drops such a connection, as documented).
 * - failure: `ws-1011` (close 1011: a handler failed), `ws-server-error` (an error event or message whose
 *   type or code says server_error / api_error), `ws-bad-close` (an undocumented close code, or 1006 without
 *   a cause the case gave), `ws-bad-event` (a server message that is not a JSON object of the protocol),
 *   and `hang` (neither a reply to the probe nor a close within the case timeout).
 * `error-logged` (any target): a line the server logged at level error or above during the batch — a
 * failure of the server's own even when the client saw a clean answer.
 */
export type WsOutcomeKind = 'ws-answered' | 'ws-closed' | 'ws-dropped' | 'ws-1011' | 'ws-server-error' | 'ws-bad-close' | 'ws-bad-event';

/**
 * `smuggled` (smuggling target): a request sent behind an ambiguous body length (repeated Content-Length,
 * Content-Length with Transfer-Encoding, a coding other than chunked) was answered, the ambiguous request was
 * served, or its connection was left open after the 400.
 */
export const FAILURES: ReadonlySet<OutcomeKind> = new Set([
  '5xx',
  'bad-envelope',
  'hang',
  'no-answer',
  'death',
  'ws-1011',
  'ws-server-error',
  'ws-bad-close',
  'ws-bad-event',
  'error-logged',
  'smuggled',
]);

/** The error body a path must answer with: the envelope, the native `{detail}`, or (raw HTTP) whatever uWS writes before any route. */
export type ErrorShape = 'envelope' | 'native' | 'transport';

export interface Outcome {
  kind: OutcomeKind;
  status?: number;
  /** For failures: what came back (first 300 characters). */
  detail?: string;
}

/** Classifies an HTTP answer (status, headers, body text). */
export function classifyHttp(status: number, headers: { get(name: string): string | null }, body: string, shape: ErrorShape = 'envelope'): Outcome {
  if (shape === 'transport' && /uWebSockets\/[\d.]+ Server/.test(body)) return { kind: 'refused', status };
  if (status >= 200 && status < 300) return { kind: '2xx', status };
  if (status === 503 && headers.get('retry-after')) return { kind: '503', status };
  if (status >= 500) return { kind: '5xx', status, detail: body.slice(0, 300) };
  if (status >= 400 && status < 500) {
    if (shape === 'transport' && body.length === 0) return { kind: '4xx', status };
    const wellFormed = shape === 'native' ? isNativeError(body, status) : isEnvelope(body);
    return wellFormed ? { kind: '4xx', status } : { kind: 'bad-envelope', status, detail: body.slice(0, 300) };
  }
  return { kind: 'bad-envelope', status, detail: `unexpected status; ${body.slice(0, 250)}` };
}

export function isEnvelope(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as { error?: Record<string, unknown> };
    const e = parsed.error;
    return !!e && typeof e.message === 'string' && typeof e.type === 'string' && 'param' in e && 'code' in e && Object.keys(parsed).length === 1;
  } catch {
    return false;
  }
}

/**
 * The native surface's error body: `{"detail": "<message>"}`, or `{"detail": [{loc, msg, type, input?}, …]}`
 * (FastAPI's validation shape, at least one entry), or for 410 endpoint_retired the envelope with `detail`.
 */
export function isNativeError(body: string, status: number): boolean {
  try {
    const parsed = JSON.parse(body) as { detail?: unknown; error?: { code?: unknown } };
    if (status === 410)
      return (
        isEnvelope(JSON.stringify({ error: parsed.error })) &&
        parsed.error?.code === 'endpoint_retired' &&
        typeof parsed.detail === 'string' &&
        Object.keys(parsed).length === 2
      );
    if (Object.keys(parsed).length !== 1) return false;
    const d = parsed.detail;
    if (typeof d === 'string') return d.length > 0;
    return Array.isArray(d) && d.length > 0 && d.every(isDetailEntry);
  } catch {
    return false;
  }
}

function isDetailEntry(entry: unknown): boolean {
  if (typeof entry !== 'object' || entry === null) return false;
  const e = entry as Record<string, unknown>;
  return (
    Array.isArray(e.loc) &&
    e.loc.length > 0 &&
    e.loc.every((p) => typeof p === 'string' || typeof p === 'number') &&
    typeof e.msg === 'string' &&
    typeof e.type === 'string'
  );
}

/**
 * A close the server sent (or 1006 when it sent none). `droppable`: the case sent text that is not UTF-8 or a
 * message over its route's bound, so uWS dropping the connection is the documented answer. `carrier`: 1011
 * app_unreachable is documented there.
 */
export function classifyClose(code: number, reason: string, opts: { droppable: boolean; carrier: boolean }): Outcome {
  if (code === 1011)
    return opts.carrier && reason === 'app_unreachable' ? { kind: 'ws-closed', status: code } : { kind: 'ws-1011', status: code, detail: reason };
  if (code === 1006)
    return opts.droppable ? { kind: 'ws-dropped', status: code } : { kind: 'ws-bad-close', status: code, detail: 'the connection ended without a close frame' };
  if ([1000, 1001, 1008, 1009, 1013].includes(code) || (code >= 4000 && code <= 4999)) return { kind: 'ws-closed', status: code };
  return { kind: 'ws-bad-close', status: code, detail: reason };
}

export interface Tally {
  cases: number;
  outcomes: Partial<Record<OutcomeKind, number>>;
  /** The first failures, replayable with `--replay target:index`. */
  findings: { index: number; kind: OutcomeKind; status?: number; detail?: string; input?: string }[];
}

export const emptyTally = (): Tally => ({ cases: 0, outcomes: {}, findings: [] });

export const failuresIn = (t: Tally): number => [...FAILURES].reduce((n, k) => n + (t.outcomes[k] ?? 0), 0);
