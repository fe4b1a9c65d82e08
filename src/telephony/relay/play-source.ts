/**
 * Fetches the audio a ConversationRelay app names in `play` ({"type":"play","source":"https://…"}). The URL
 * comes from the integrator's app, so it is an outbound request Kuma makes on someone else's say-so: only
 * http(s), the operator's allow-list checked before the first request and again before every redirect hop
 * (redirects are followed by hand, at most 3, so a hop cannot reach a host the list never saw), a byte cap
 * enforced while streaming (a lying or missing Content-Length cannot get past it), and one deadline for the
 * whole fetch. Decoding the audio is the caller's business; this returns the bytes and the content type.
 */
import { PlaySourceError } from './relay-errors.js';

export interface PlaySourceOptions {
  /** The operator's allow-list check; throws (anything) to refuse. Runs before each request. */
  checkUrl(url: URL): Promise<void> | void;
  /** Largest body accepted (decoded bytes). */
  maxBytes?: number;
  /** Deadline for the whole fetch: every hop and the body. */
  timeoutMs?: number;
  maxRedirects?: number;
  signal?: AbortSignal;
}

export interface PlaySource {
  bytes: Uint8Array;
  /** The Content-Type the server gave (lower-cased, parameters kept), or null. */
  contentType: string | null;
  /** The URL the bytes came from, after redirects. */
  url: string;
}

export const PLAY_SOURCE_DEFAULTS = {
  maxBytes: 10 * 1024 * 1024,
  timeoutMs: 10_000,
  maxRedirects: 3,
} as const;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export async function fetchPlaySource(source: string, options: PlaySourceOptions): Promise<PlaySource> {
  const maxBytes = options.maxBytes ?? PLAY_SOURCE_DEFAULTS.maxBytes;
  const timeoutMs = options.timeoutMs ?? PLAY_SOURCE_DEFAULTS.timeoutMs;
  const maxRedirects = options.maxRedirects ?? PLAY_SOURCE_DEFAULTS.maxRedirects;
  if (options.signal?.aborted) throw new PlaySourceError('aborted', 'the call ended before the play source was fetched');

  // One controller for every hop and the body; `why` remembers whether the deadline or the call fired it.
  const controller = new AbortController();
  let why: 'timeout' | 'aborted' | null = null;
  const stop = (reason: 'timeout' | 'aborted') => {
    why ??= reason;
    controller.abort();
  };
  const timer = setTimeout(() => stop('timeout'), timeoutMs);
  const onAbort = () => stop('aborted');
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    let url = await allowed(source, options);
    for (let hop = 0; ; hop += 1) {
      const response = await request(url, controller.signal, () => why);
      if (REDIRECT_STATUSES.has(response.status)) {
        await discard(response);
        const location = response.headers.get('location');
        if (location === null) throw new PlaySourceError('http_status', `the play source answered HTTP ${response.status} without a Location`, response.status);
        if (hop >= maxRedirects) throw new PlaySourceError('too_many_redirects', `the play source redirected more than ${maxRedirects} times`);
        url = await allowed(new URL(location, url).href, options);
        continue;
      }
      if (!response.ok) {
        await discard(response);
        throw new PlaySourceError('http_status', `the play source answered HTTP ${response.status}`, response.status);
      }
      const bytes = await readCapped(response, maxBytes, () => stopped(why, timeoutMs));
      return { bytes, contentType: response.headers.get('content-type')?.toLowerCase() ?? null, url: url.href };
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    // Whatever is still in flight (a body we stopped reading) is dropped with the connection.
    controller.abort();
  }

  function request(url: URL, signal: AbortSignal, fired: () => 'timeout' | 'aborted' | null): Promise<Response> {
    return fetch(url, { redirect: 'manual', signal, headers: { accept: 'audio/*, */*;q=0.1' } }).catch((cause: unknown) => {
      throw stopped(fired(), timeoutMs) ?? new PlaySourceError('fetch_failed', `could not fetch the play source: ${causeText(cause)}`, null, { cause });
    });
  }
}

/** Parses and checks one URL (the source, or a redirect's target). */
async function allowed(href: string, options: PlaySourceOptions): Promise<URL> {
  if (!URL.canParse(href)) throw new PlaySourceError('invalid_url', 'the play source is not an absolute URL');
  const url = new URL(href);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new PlaySourceError('invalid_url', `the play source must be http:// or https://, not ${url.protocol}//`);
  }
  try {
    await options.checkUrl(url);
  } catch (cause) {
    const why = cause instanceof Error ? `: ${cause.message}` : '';
    throw new PlaySourceError('not_allowed', `the play source host ${url.host} is not allowed${why}`, null, { cause });
  }
  return url;
}

/** `interrupted` says whether our own deadline or the call broke the body off (null: the server did). */
async function readCapped(response: Response, maxBytes: number, interrupted: () => PlaySourceError | null): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'));
  // Content-Length counts encoded bytes; only trust it to refuse early when there is no content coding.
  if (response.headers.get('content-encoding') === null && Number.isFinite(declared) && declared > maxBytes) {
    await discard(response);
    throw tooLarge(maxBytes);
  }
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge(maxBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof PlaySourceError) throw error;
    throw interrupted() ?? new PlaySourceError('fetch_failed', `the play source's body broke off: ${causeText(error)}`, null, { cause: error });
  }
  return concat(chunks, total);
}

function stopped(why: 'timeout' | 'aborted' | null, timeoutMs: number): PlaySourceError | null {
  if (why === 'timeout') return new PlaySourceError('timeout', `the play source did not arrive within ${timeoutMs} ms`);
  if (why === 'aborted') return new PlaySourceError('aborted', 'the call ended while the play source was being fetched');
  return null;
}

function tooLarge(maxBytes: number): PlaySourceError {
  return new PlaySourceError('too_large', `the play source is larger than ${maxBytes} bytes`);
}

async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}

/** undici hides the useful part (ECONNREFUSED…) in `cause`. */
function causeText(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
