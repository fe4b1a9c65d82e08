/**
 * One server process: on its own (KUMA_WORKERS=1, the default) or as a worker of the primary
 * (primary.ts). Alone, it listens at once (/readyz says not-ready until the models are warm), prints the
 * first-start banner itself and ignores SIGHUP with a warning; as a worker it listens only once its models
 * are warm (the other workers serve meanwhile), reports `listening` and `ready` to the primary, leaves
 * SIGHUP to the primary (which replaces workers one by one), and stops gracefully when the primary goes.
 *
 * Stopping (SIGTERM/SIGINT, or the primary gone): /readyz says not-ready at once, the node keeps serving
 * for KUMA_DRAIN_DELAY_MS, then stops listening, lets in-flight requests and realtime sessions finish
 * within KUMA_SHUTDOWN_GRACE_MS, and exits.
 */
import cluster from 'node:cluster';
import type { Config } from '../config/config.js';
import { startKuma } from '../server.js';
import { announceReadiness, ensureFirstStartKeys, printBanner } from './first-start.js';
import type { WorkerMessage } from './messages.js';
import { writeBesideLog } from '../observability/logger.js';

export async function serveProcess(config: Config): Promise<void> {
  const isWorker = cluster.isWorker;
  const server = await startKuma({ config, listenWhenWarm: isWorker });
  const tell = (message: WorkerMessage) => {
    if (process.connected) process.send?.(message);
  };

  if (isWorker) {
    tell({ kuma: 'listening', port: server.port });
    server.enginesReady.then(
      () => tell({ kuma: 'ready' }),
      (err: Error) => tell({ kuma: 'not-ready', reason: err.message }),
    );
  } else {
    printBanner(server.port, config, await ensureFirstStartKeys(server.store, config), 1);
    announceReadiness(server.port, config, server.enginesReady, (text) => writeBesideLog(server.logger, text));
  }

  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    server.logger.info({ reason }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (isWorker) {
    // The primary handles SIGHUP (a terminal closing sends it to the whole group): a worker only follows orders.
    process.on('SIGHUP', () => {});
    // The primary died or was killed: nobody would restart or stop this worker, so it stops itself.
    process.on('disconnect', () => stop('primary process gone'));
  } else {
    process.on('SIGHUP', () => server.logger.warn('SIGHUP ignored: rolling restarts need several workers (KUMA_WORKERS=2 or more)'));
  }
}
