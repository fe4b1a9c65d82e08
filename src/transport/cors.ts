/** CORS for browser apps: every response names the allowed origin; preflight requests get 204 at once. */

export function corsHeaders(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': 'x-request-id, retry-after, server-timing, deprecation, sunset, link',
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
