/** CORS for browser apps: every response names the allowed origin; preflight requests get 204 at once. */

/**
 * The response headers a browser app may read (beyond the CORS-safelisted ones): the request id, the
 * retry and timing hints, the retirement calendar, and the rate-limit counts, which an app needs to pace
 * itself before it hits a 429 (the openai SDK reads them too). Listed by name: a `*` would not cover a
 * request made with credentials.
 */
const EXPOSED = [
  'x-request-id',
  'retry-after',
  'server-timing',
  'deprecation',
  'sunset',
  'link',
  ...['requests', 'tokens'].flatMap((dimension) => ['limit', 'remaining', 'reset'].map((part) => `x-ratelimit-${part}-${dimension}`)),
].join(', ');

export function corsHeaders(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': EXPOSED,
  };
}

export function preflightHeaders(origin: string, requestedHeaders: string | undefined): Record<string, string> {
  return {
    ...corsHeaders(origin),
    'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
    // Echo what the browser asks for: SDKs add their own headers (x-stainless-*, openai-beta, ...).
    'access-control-allow-headers': requestedHeaders || 'authorization, x-api-key, content-type',
    'access-control-max-age': '86400',
    vary: 'Origin, Access-Control-Request-Headers',
  };
}
