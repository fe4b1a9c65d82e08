/**
 * The uWebSockets.js HTTP server: one catch-all handler that reads the request head and hands the request
 * to an Exchange (exchange.ts), which routes it, runs the handler, writes its result and logs it. Also
 * owns listening and graceful shutdown. This folder is the only code that imports uWebSockets.js.
 */
import uWS from 'uWebSockets.js';
import { Exchange } from './exchange.js';
import { readRequestHead } from './request-head.js';
import { ServerState, type HttpServerOptions } from './server-state.js';

export type { HttpServerOptions };

export interface RunningHttpServer {
  port: number;
  /** Requests being handled now. */
  inFlight(): number;
  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then closes every socket. */
  close(graceMs: number): Promise<void>;
}

export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const server = new ServerState(options);
  const app = uWS.App();
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
    async close(graceMs: number) {
      if (server.draining) return;
      uWS.us_listen_socket_close(listenSocket);
      await server.drain(graceMs);
      app.close();
    },
  };
}
