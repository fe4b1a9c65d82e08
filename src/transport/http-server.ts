/**
 * The uWebSockets.js server: one catch-all HTTP handler that reads the request head and hands the request
 * to an Exchange (exchange.ts), which routes it, runs the handler, writes its result and logs it; beside it
 * the WebSocket behaviour (websocket-sessions.ts), whose upgrade requests go through the same Exchange.
 * Also owns TLS, listening and graceful shutdown. This folder is the only code that imports uWebSockets.js.
 */
import fs from 'node:fs';
import net from 'node:net';
import uWS from 'uWebSockets.js';
import { Exchange } from './exchange.js';
import { readRequestHead } from './request-head.js';
import { ServerState, type HttpServerOptions } from './server-state.js';
import { WebSocketSessions } from './websocket-sessions.js';

export type { HttpServerOptions };

/** uSockets' listen options (uWS.js's typings declare them as the enum ListenOptions, which it does not export at run time). */
const LIBUS_LISTEN_DEFAULT = 0;
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

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
  app.filter((_res, count) => {
    if (count === 1) server.connectionOpened();
  });
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

  // uSockets sets SO_REUSEPORT on every listening socket, so by default a second server on a busy port
  // binds beside the first and the kernel splits connections between them (a key then "works half the
  // time"). A lone server asks for the port exclusively; only a cluster's workers share it on purpose.
  const listenOptions = options.sharedPort ? LIBUS_LISTEN_DEFAULT : LIBUS_LISTEN_EXCLUSIVE_PORT;
  const listenSocket = await new Promise<uWS.us_listen_socket | false>((resolve) => {
    // uWS.js takes (host, port, options, callback) natively; its typings list options only without a host.
    (app.listen as unknown as (host: string, port: number, options: number, cb: (token: uWS.us_listen_socket | false) => void) => void)(
      options.host,
      options.port,
      listenOptions,
      resolve,
    );
  });
  if (!listenSocket) {
    app.close();
    throw new ListenError(options.host, options.port, await whyNotListening(options.host, options.port));
  }
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

/** The server could not listen: the port is taken (`EADDRINUSE`), not allowed (`EACCES`), or the host is not this machine's. */
export class ListenError extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
    readonly code: string,
  ) {
    super(
      code === 'EADDRINUSE'
        ? `Cannot listen on ${host}:${port}: address in use — another program (another Kuma?) is serving on port ${port}. Stop it, or choose another port (KUMA_PORT).`
        : code === 'EACCES'
          ? `Cannot listen on ${host}:${port}: permission denied (ports below 1024 need privileges). Choose another port (KUMA_PORT).`
          : `Cannot listen on ${host}:${port} (${code}). Check KUMA_HOST and KUMA_PORT.`,
    );
  }
}

/**
 * uWS says only "false" when it cannot listen: a plain Node socket tried on the same address says why
 * (it binds without SO_REUSEPORT, as the exclusive listen did, and is closed at once).
 */
function whyNotListening(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve('EUNKNOWN')));
  });
}

/** https:// and wss:// on the same port when a certificate is configured. */
function createApp(tls: HttpServerOptions['tls']): uWS.TemplatedApp {
  if (!tls) return uWS.App();
  // uWS reports an unreadable certificate with a bare "construction failed": name the file instead.
  for (const file of [tls.certFile, tls.keyFile]) fs.accessSync(file, fs.constants.R_OK);
  return uWS.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile });
}
