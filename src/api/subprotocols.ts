/**
 * WebSocket subprotocols (Sec-WebSocket-Protocol) as a duplex route sees them. Browsers cannot set headers
 * on a WebSocket, so they offer `realtime` and carry the key as `openai-insecure-api-key.<key>` (PROTOCOLS
 * §8); the server must answer one protocol the client offered, or clients (browsers, the `ws` package)
 * fail the connection.
 */

/** The subprotocols the client offered, in its order (empty for none). */
export function offeredSubprotocols(headers: Record<string, string>): string[] {
  const header = headers['sec-websocket-protocol'];
  if (!header) return [];
  return header
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/**
 * What a route answers: `preferred` when the client offered it, else no subprotocol. Never one of the
 * offered key carriers: answering `openai-insecure-api-key.<key>` would echo the key back.
 */
export function chooseSubprotocol(headers: Record<string, string>, preferred = 'realtime'): string | undefined {
  return offeredSubprotocols(headers).includes(preferred) ? preferred : undefined;
}
