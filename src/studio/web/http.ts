/**
 * Requests to this origin with a bearer credential (an API key or an admin key), and the page's wording of
 * what went wrong: no key, a refused key, no credit (402), too many requests, the server not ready (503,
 * with its Retry-After). The credential is only ever sent in the Authorization header, never in a URL.
 */

export class RequestFailed extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly retryAfterSeconds: number | null,
  ) {
    super(message);
  }
}

/** The sentence shown for a failed response: the server's own message, framed by what its status means. */
export async function describeFailure(response: Response): Promise<RequestFailed> {
  let serverMessage = '';
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    serverMessage = body.error?.message ?? '';
  } catch {
    // not a JSON error envelope: the status says enough
  }
  const retryHeader = response.headers.get('retry-after');
  const retry = retryHeader !== null && /^\d+$/.test(retryHeader) ? Number(retryHeader) : null;
  const lead: Record<number, string> = {
    401: 'The key was refused.',
    402: 'The account has no credit left: add credit in the console, then try again.',
    403: 'This key may not do that.',
    413: 'Too large.',
    429: 'Too many requests right now.',
    503: 'The server is not ready.',
  };
  const retryText = retry !== null ? ` Try again in ${retry} s.` : response.status === 503 ? ' Try again shortly.' : '';
  const parts = [lead[response.status] ?? `The request failed (HTTP ${response.status}).`, serverMessage, retryText.trim()];
  return new RequestFailed(parts.filter(Boolean).join(' '), response.status, retry);
}

/** A credential holder: requests go out with it, or fail with `missingMessage` when there is none. */
export class Client {
  constructor(
    private readonly base: string,
    private readonly credential: () => string | null,
    private readonly missingMessage: string,
  ) {}

  get hasCredential(): boolean {
    return this.credential() !== null;
  }

  /** The response when it is 2xx; otherwise a RequestFailed with the page's wording. */
  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const credential = this.credential();
    if (!credential) throw new Error(this.missingMessage);
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${credential}`);
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}`, { ...init, headers });
    } catch {
      throw new Error('The server could not be reached. Is it running?');
    }
    if (!response.ok) throw await describeFailure(response);
    return response;
  }

  async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    return (await (await this.request(path, init)).json()) as T;
  }

  /** A JSON body sent with `method` (POST unless said). */
  async send<T>(path: string, body: unknown, method = 'POST'): Promise<T> {
    return this.json<T>(path, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  }
}
