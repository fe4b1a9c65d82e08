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
const REPEATED_LENGTH = 'More than one Content-Length header.';
const REPEATED_CODING = 'More than one Transfer-Encoding header.';
const LENGTH_AND_CODING = 'Content-Length and Transfer-Encoding together.';
const NOT_CHUNKED = 'Transfer-Encoding other than chunked.';
const DIGITS = /^\d+$/;

// uWS's forEach takes a callback with no context; the head being read lives here while it runs
// (synchronously), so the callback is one function for the process rather than a closure per request.
let reading: RequestHead | null = null;
let lengths = 0;
let codings = 0;

function collectHeader(name: string, value: string): void {
  const head = reading!;
  if (name === 'content-length') checkContentLength(head, value);
  else if (name === 'transfer-encoding') checkTransferEncoding(head, value);
  head.headers[name] = value;
}

/**
 * Request smuggling: a body length a proxy in front could read differently from uWS. uWS takes the first
 * Content-Length and reads any Transfer-Encoding as chunked; a proxy may take the last, or the coding's
 * word. So any repeated Content-Length (equal values too), a Content-Length that is not a plain number, a
 * repeated Transfer-Encoding, or one that is not exactly `chunked` is refused (RFC 9112 §6.3: 400 and
 * close). (uWS itself refuses Content-Length with Transfer-Encoding, with its own 400; checked here too.)
 * The first reason found is the one reported.
 */
function checkContentLength(head: RequestHead, value: string): void {
  lengths++;
  if (!DIGITS.test(value.trim())) fail(head, NOT_AN_INTEGER);
  else if (lengths > 1) fail(head, REPEATED_LENGTH);
  if (codings > 0) fail(head, LENGTH_AND_CODING);
}

function checkTransferEncoding(head: RequestHead, value: string): void {
  codings++;
  if (codings > 1) fail(head, REPEATED_CODING);
  else if (value.trim().toLowerCase() !== 'chunked') fail(head, NOT_CHUNKED);
  if (lengths > 0) fail(head, LENGTH_AND_CODING);
}

function fail(head: RequestHead, reason: string): void {
  head.framingError ??= reason;
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
  lengths = 0;
  codings = 0;
  try {
    req.forEach(collectHeader);
  } finally {
    reading = null;
  }
  head.hasBody = Number(head.headers['content-length'] ?? 0) > 0 || head.headers['transfer-encoding'] !== undefined;
  return head;
}
