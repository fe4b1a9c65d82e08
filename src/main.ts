/**
 * Process entry point (`npm start`): config from the environment, then either one server process
 * (KUMA_WORKERS=1, the default) or a primary that runs KUMA_WORKERS server processes on one port
 * (src/cluster/primary.ts); a cluster worker lands here too and serves.
 */
import cluster from 'node:cluster';
import { ConfigError, loadConfig } from './config/config.js';
import { serveProcess } from './cluster/serve-process.js';
import { runPrimary } from './cluster/primary.js';

async function main(): Promise<void> {
  const config = loadConfig();
  if (cluster.isPrimary && config.workers > 1) await runPrimary(config);
  else await serveProcess(config);
}

main().catch((err) => {
  process.stderr.write(err instanceof ConfigError ? `${err.message}\n` : `Kuma failed to start: ${err?.stack ?? err}\n`);
  process.exit(1);
});
