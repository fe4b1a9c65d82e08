/**
 * A WebSocket endpoint that costs almost nothing, for generator-cost.ts: it answers the upgrade, sends the
 * two events a session worker waits for (session.created, session.updated) and then only counts the bytes
 * it receives, parsing nothing — so the generator's CPU is measured without a server under load slowing
 * its sockets down, and the sink's own work is the same whichever client the generator uses.
 *
 * Run as a child process: prints `{"port": N}` on stdout; answers any IPC message with `{ bytes }` (received
 * so far); exits when the IPC channel closes.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** An unmasked, final server text frame (payloads here are under 126 bytes). */
const textFrame = (text: string) => Buffer.concat([Buffer.from([0x81, Buffer.byteLength(text)]), Buffer.from(text)]);
const greeting = Buffer.concat([textFrame('{"type":"session.created"}'), textFrame('{"type":"session.updated"}')]);

let bytes = 0;
const server = http.createServer((_req, res) => res.writeHead(426).end());
server.on('upgrade', (req, socket, head) => {
  const accept = crypto.createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  socket.write(greeting);
  bytes += head.length;
  socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
  socket.on('error', () => {}); // a generator stopped mid-frame resets its sockets: expected
  socket.on('end', () => socket.end());
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`));
process.on('message', () => process.send!({ bytes }));
process.on('disconnect', () => process.exit(0));
