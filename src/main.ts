/**
 * Process entry point (`npm start`): config from the environment, then either one server process
 * (KUMA_WORKERS=1, the default) or a primary that runs KUMA_WORKERS server processes on one port
 * (src/cluster/primary.ts); a cluster worker lands here too and serves.
 */
import cluster from 'node:cluster';
import { ConfigError, invalidSetting, loadConfig } from './config/config.js';
import { checkExecutionProviders, ExecutionProviderError } from './engines/onnx/execution-providers.js';
import { serveProcess } from './cluster/serve-process.js';
import { runPrimary } from './cluster/primary.js';

async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything is prepared or served; once per machine: a cluster's workers were checked by their primary.
  if (!cluster.isWorker) {
    await checkExecutionProviders(config.engineExecutionProviders).catch((err: unknown) => {
      throw err instanceof ExecutionProviderError ? invalidSetting('engineExecutionProviders', err.message) : err;
    });
  }
  if (cluster.isPrimary && config.workers > 1) await runPrimary(config);
  else await serveProcess(config);
}

main().catch((err) => {
  process.stderr.write(err instanceof ConfigError ? `${err.message}\n` : `Kuma failed to start: ${err?.stack ?? err}\n`);
  process.exit(1);
});
