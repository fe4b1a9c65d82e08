/**
 * The uWebSockets.js server: one catch-all HTTP handler that reads the request head and hands the request
 * to an Exchange (exchange.ts), which routes it, runs the handler, writes its result and logs it; beside it
 * the WebSocket behaviour (websocket-sessions.ts), whose upgrade requests go through the same Exchange.
 * Also owns TLS, listening and graceful shutdown. This folder is the only code that imports uWebSockets.js.
 */
import fs from 'node:fs';
import uWS from 'uWebSockets.js';
import { Exchange } from './exchange.js';
import { readRequestHead } from './request-head.js';
import { ServerState, type HttpServerOptions } from './server-state.js';
import { WebSocketSessions } from './websocket-sessions.js';

export type { HttpServerOptions };

export interface RunningHttpServer {
  port: number;
  /** Requests being handled now. */
  inFlight(): number;
  /** WebSocket sessions open now. */
  openSessions(): number;
  /**
   * Stops accepting, lets in-flight requests and WebSocket sessions (told through `onShutdown`) finish for
   * up to `graceMs`, closes the sessions left with 1001, then closes every socket.
   */
  close(graceMs: number): Promise<void>;
}

export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const server = new ServerState(options);
  const app = createApp(options.tls);
  const sessions = new WebSocketSessions(server);
  // Non-upgrade requests fall through the ws routes (uWS yields them) to the handler below. uWS routes an
  // upgrade to the most specific pattern, so a route with its own bound gets its own behaviour (and the
  // router's forgiven trailing slash too); the exchange checks the two agree (Exchange.upgrade).
  app.ws('/*', sessions.behavior());
  for (const route of options.routes) {
    if (route.websocket) for (const pattern of [route.pattern, `${route.pattern}/`]) app.ws(pattern, sessions.behavior(route.websocket));
  }
  app.any('/*', (res, req) => {
    try {
      // uWS's req lives only until this callback returns: the head is read from it now.
      new Exchange(server, res, readRequestHead(req)).start();
    } catch (err) {
      // A bug in the code above must cost one connection, never the process.
      options.logger.error({ err }, 'request setup threw');
      try {
        res.close();
      } catch {
        // already answered or aborted
      }
    }
  });

  const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    app.listen(options.host, options.port, (token) => (token ? resolve(token) : reject(new Error(`Cannot listen on ${options.host}:${options.port}`))));
  });
  const port = uWS.us_socket_local_port(listenSocket);

  return {
    port,
    inFlight: () => server.inFlight.size,
    openSessions: () => sessions.open.size,
    async close(graceMs: number) {
      if (server.draining) return;
      uWS.us_listen_socket_close(listenSocket);
      await Promise.all([server.drain(graceMs), sessions.shutdown(graceMs)]);
      // One turn of the loop for the 1001 close frames to be written before the sockets go.
      await new Promise((resolve) => setImmediate(resolve));
      app.close();
    },
  };
}

/** https:// and wss:// on the same port when a certificate is configured. */
function createApp(tls: HttpServerOptions['tls']): uWS.TemplatedApp {
  if (!tls) return uWS.App();
  // uWS reports an unreadable certificate with a bare "construction failed": name the file instead.
  for (const file of [tls.certFile, tls.keyFile]) fs.accessSync(file, fs.constants.R_OK);
  return uWS.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile });
}
