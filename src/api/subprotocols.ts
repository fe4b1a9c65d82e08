/**
 * WebSocket subprotocols (Sec-WebSocket-Protocol) as a duplex route sees them. Browsers cannot set headers
 * on a WebSocket, so they offer `realtime` and carry the key as `openai-insecure-api-key.<key>` (PROTOCOLS
 * §8); the server must answer one protocol the client offered, or clients (browsers, the `ws` package)
 * fail the connection ("Server sent no subprotocol", RFC 6455 §4.1).
 */
import { KEY_SUBPROTOCOL_PREFIX } from '../auth/api-keys.js';

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
 * What a route answers: `preferred` when the client offered it. Otherwise, a client that offered only its
 * credential (`openai-insecure-api-key.<key>`, with or without protocols this server does not speak) gets
 * that entry echoed: it is the only acceptable protocol it offered, and answering none makes an RFC 6455
 * client abort a connection that was authenticated. The echo goes back on the connection that sent it, so it
 * tells the client nothing it did not have; the key entry is never chosen while `preferred` was offered.
 * Anything else offered alone (a protocol this server does not speak) gets no subprotocol, as before.
 */
export function chooseSubprotocol(headers: Record<string, string>, preferred = 'realtime'): string | undefined {
  const offered = offeredSubprotocols(headers);
  if (offered.includes(preferred)) return preferred;
  return offered.find((p) => p.startsWith(KEY_SUBPROTOCOL_PREFIX) && p.length > KEY_SUBPROTOCOL_PREFIX.length);
}
