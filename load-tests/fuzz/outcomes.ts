/**
 * What the fuzz counts as a pass or a failure, per case, in one place:
 * - pass: a 2xx; a 4xx whose body is the OpenAI error envelope {"error":{message,type,param,code}} (a 4xx
 *   the transport writes before any route — uWS refusing a request line — may have no body: raw target);
 *   a 503 with Retry-After (overload is the server protecting itself, not an application failure; counted
 *   apart); for raw HTTP, the connection closed without an answer, or uWS's own HTML refusal of a request
 *   its parser rejects before any route runs (400 Bad Request, 431, 505 for a version other than
 *   HTTP/1.1) — counted apart as `closed` and `refused`: the application never saw those requests.
 * - failure: any other 5xx (`5xx`), a 4xx without the envelope (`bad-envelope`), no answer and no close
 *   within the per-case timeout (`hang`), a JSON/multipart request that got no HTTP answer at all
 *   (`no-answer`), the server process gone (`death`).
 */
export type OutcomeKind = '2xx' | '4xx' | '503' | 'closed' | 'refused' | '5xx' | 'bad-envelope' | 'hang' | 'no-answer' | 'death';

export const FAILURES: ReadonlySet<OutcomeKind> = new Set(['5xx', 'bad-envelope', 'hang', 'no-answer', 'death']);

export interface Outcome {
  kind: OutcomeKind;
  status?: number;
  /** For failures: what came back (first 300 characters). */
  detail?: string;
}

/** Classifies an HTTP answer (status, headers, body text). */
export function classifyHttp(status: number, headers: { get(name: string): string | null }, body: string, envelopeRequired = true): Outcome {
  if (!envelopeRequired && /uWebSockets\/[\d.]+ Server/.test(body)) return { kind: 'refused', status };
  if (status >= 200 && status < 300) return { kind: '2xx', status };
  if (status === 503 && headers.get('retry-after')) return { kind: '503', status };
  if (status >= 500) return { kind: '5xx', status, detail: body.slice(0, 300) };
  if (status >= 400 && status < 500) {
    if (!envelopeRequired && body.length === 0) return { kind: '4xx', status };
    return isEnvelope(body) ? { kind: '4xx', status } : { kind: 'bad-envelope', status, detail: body.slice(0, 300) };
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

export interface Tally {
  cases: number;
  outcomes: Partial<Record<OutcomeKind, number>>;
  /** The first failures, replayable with `--replay target:index`. */
  findings: { index: number; kind: OutcomeKind; status?: number; detail?: string; input?: string }[];
}

export const emptyTally = (): Tally => ({ cases: 0, outcomes: {}, findings: [] });

export const failuresIn = (t: Tally): number => [...FAILURES].reduce((n, k) => n + (t.outcomes[k] ?? 0), 0);
