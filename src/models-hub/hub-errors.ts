/**
 * Errors of `npm run models:pull` and the retry policy shared by the listing and the downloads: which
 * failures are worth another try (network, 429, 5xx), how long to wait, and messages that say what to do
 * (no network, wrong host, disk full) instead of undici's bare "fetch failed".
 */

export type HubErrorKind = 'bad-request' | 'not-found' | 'gated' | 'unauthorized' | 'http' | 'range' | 'bad-response' | 'network' | 'checksum' | 'disk';

export class HubError extends Error {
  constructor(
    readonly kind: HubErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'HubError';
  }
}

export interface RetryPolicy {
  /** Tries in all (1 = no retry). */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const isRetryableStatus = (status: number) => status === 408 || status === 429 || status >= 500;

/** Exponential backoff with jitter; a server's Retry-After (seconds) wins when it asks for longer. */
export function retryDelayMs(policy: RetryPolicy, attempt: number, retryAfter?: string | null): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  const jittered = exponential * (0.75 + Math.random() * 0.5);
  const asked = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) * 1000 : 0;
  return Math.min(Math.max(jittered, asked), Math.max(policy.maxDelayMs, asked));
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The innermost `cause` code of a fetch failure (undici wraps the socket error). */
function causeOf(err: unknown): { code?: string; message: string } {
  let current = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  let found: { code?: string; message: string } = { message: String((current as Error | undefined)?.message ?? err) };
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === 'string') found = { code: current.code, message: String(current.message ?? current.code) };
    else if (typeof current.message === 'string' && current.message !== 'fetch failed') found = { ...found, message: current.message };
    current = current.cause as typeof current;
  }
  return found;
}

/** A network failure after the last retry, said in words. */
export function networkError(err: unknown, url: string, attempts: number, endpoint: string): HubError {
  if (err instanceof HubError) return err;
  const { code, message } = causeOf(err);
  const host = new URL(url).host;
  const tries = attempts > 1 ? ` after ${attempts} attempts` : '';
  const endpointHint = `(HF_ENDPOINT or --endpoint is ${endpoint})`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new HubError('network', `Cannot resolve ${host}${tries}: no internet connection or DNS ${endpointHint}`);
  }
  if (code === 'ECONNREFUSED') return new HubError('network', `Connection to ${host} refused${tries} ${endpointHint}`);
  if (code === 'CERT_HAS_EXPIRED' || code?.startsWith('ERR_TLS') || code?.includes('CERT')) {
    return new HubError('network', `TLS failure talking to ${host}: ${message} (${code}); a proxy that rewrites TLS needs NODE_EXTRA_CA_CERTS`);
  }
  if ((err as Error)?.name === 'TimeoutError' || (err as Error)?.name === 'AbortError' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new HubError('network', `${host} stopped answering${tries} (timed out)`);
  }
  return new HubError('network', `Network failure talking to ${host}${tries}: ${message}${code && !message.includes(code) ? ` (${code})` : ''}`);
}

const DISK_CODES: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  EISDIR: 'a directory is in the way',
  ENOTDIR: 'a file is in the way of a directory',
  EMFILE: 'too many open files',
};

/** A file-system failure as a HubError naming the file and the cause; anything else is rethrown as is. */
export function diskError(err: unknown, file: string, doing: string): Error {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code && DISK_CODES[code]) return new HubError('disk', `Cannot ${doing} ${file}: ${DISK_CODES[code]} (${code})`);
  return err as Error;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 2 : value < 100 ? 1 : 0)} ${units[unit]}`;
}
