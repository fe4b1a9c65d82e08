/**
 * What is read from uWS's HttpRequest before its callback returns (uWS frees it then): method, path,
 * query, headers, and whether the framing is one a proxy in front of us could read differently.
 */
import type uWS from 'uWebSockets.js';

export interface RequestHead {
  /** Case-sensitive (RFC 9110 §9.1): `get` is not GET. */
  method: string;
  path: string;
  query: string;
  /** Lower-cased names; a repeated header keeps its last value. */
  headers: Record<string, string>;
  hasBody: boolean;
  /** Why the request's framing is ambiguous, or null. */
  framingError: string | null;
}

const NOT_AN_INTEGER = 'Content-Length must be a single non-negative integer.';
const CONFLICTING = 'Conflicting Content-Length headers.';
const DIGITS = /^\d+$/;

// uWS's forEach takes a callback with no context; the head being read lives here while it runs
// (synchronously), so the callback is one function for the process rather than a closure per request.
let reading: RequestHead | null = null;
let firstLength: string | null = null;

function collectHeader(name: string, value: string): void {
  const head = reading!;
  if (name === 'content-length') checkContentLength(head, value);
  head.headers[name] = value;
}

/**
 * Request smuggling: more than one Content-Length with different values, or one that is not a plain
 * number. (uWS itself refuses a request with both Content-Length and Transfer-Encoding, with its own 400.)
 * A value that is not a number outranks a conflict, whichever comes first.
 */
function checkContentLength(head: RequestHead, value: string): void {
  const trimmed = value.trim();
  if (!DIGITS.test(trimmed)) {
    head.framingError = NOT_AN_INTEGER;
    return;
  }
  const normalized = trimmed.replace(/^0+(?=\d)/, '');
  if (firstLength === null) firstLength = normalized;
  else if (firstLength !== normalized && head.framingError === null) head.framingError = CONFLICTING;
}

export function readRequestHead(req: uWS.HttpRequest): RequestHead {
  const head: RequestHead = {
    method: req.getCaseSensitiveMethod(),
    path: req.getUrl(),
    query: req.getQuery() ?? '',
    headers: {},
    hasBody: false,
    framingError: null,
  };
  reading = head;
  firstLength = null;
  try {
    req.forEach(collectHeader);
  } finally {
    reading = null;
  }
  head.hasBody = Number(head.headers['content-length'] ?? 0) > 0 || head.headers['transfer-encoding'] !== undefined;
  return head;
}
