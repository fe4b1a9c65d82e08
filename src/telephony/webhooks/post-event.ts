/**
 * One delivery attempt: POST the event's JSON to the endpoint, signed for this attempt's time, within a
 * per-attempt timeout. Redirects are not followed (the allow-list judged this URL, not wherever a redirect
 * points). The response body is not read: only the status matters, and a receiver must not be able to make
 * Kuma buffer a large answer.
 */
import { outcomeOfStatus, type AttemptOutcome } from './retry-policy.js';
import { EVENT_ID_HEADER, SIGNATURE_HEADER, signWebhook } from './signature.js';

export const USER_AGENT = 'Kuma-Webhooks/1';

export interface PostRequest {
  url: URL;
  secret: string;
  eventId: string;
  body: string;
  timeoutMs: number;
  /** Fired when the sender stops for good (shutdown deadline): the attempt ends at once. */
  stop: AbortSignal;
}

export type PostOutcome = AttemptOutcome | { kind: 'stopped' };

export async function postEvent(request: PostRequest): Promise<PostOutcome> {
  const timeout = AbortSignal.timeout(request.timeoutMs);
  try {
    const response = await fetch(request.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        [EVENT_ID_HEADER]: request.eventId,
        [SIGNATURE_HEADER]: signWebhook(request.secret, request.body),
      },
      body: request.body,
      redirect: 'manual',
      signal: AbortSignal.any([timeout, request.stop]),
    });
    // Release the connection without reading what the receiver wrote.
    await response.body?.cancel().catch(() => undefined);
    return outcomeOfStatus(response.status, response.headers.get('retry-after'));
  } catch (error) {
    if (request.stop.aborted) return { kind: 'stopped' };
    if (timeout.aborted) return { kind: 'retry', reason: `no answer within ${request.timeoutMs} ms` };
    return { kind: 'retry', reason: `network error: ${networkErrorCode(error)}` };
  }
}

/** undici reports "fetch failed" with the useful part (ECONNREFUSED, ENOTFOUND…) in `cause`. */
function networkErrorCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}
