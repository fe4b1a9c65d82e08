/**
 * Process entry point (`npm start`): config from the environment, then either one server process
 * (KUMA_WORKERS=1, the default) or a primary that runs KUMA_WORKERS server processes on one port
 * (src/cluster/primary.ts); a cluster worker lands here too and serves.
 */
import cluster from 'node:cluster';
import { ConfigError, invalidSetting, loadConfig } from './config/config.js';
import { checkConfigFiles } from './config/config-files.js';

async function main(): Promise<void> {
  const config = loadConfig();
  // Files named by the config (TLS, manifest, temp folder) before anything else is even imported: a bad path
  // is reported at once, naming its variable, not after the models load (nor as a native abort on the way out).
  checkConfigFiles(config);
  const { checkExecutionProviders, ExecutionProviderError } = await import('./engines/onnx/execution-providers.js');
  // Before anything is prepared or served; once per machine: a cluster's workers were checked by their primary.
  if (!cluster.isWorker) {
    await checkExecutionProviders(config.engineExecutionProviders).catch((err: unknown) => {
      throw err instanceof ExecutionProviderError ? invalidSetting('engineExecutionProviders', err.message) : err;
    });
  }
  if (cluster.isPrimary && config.workers > 1) await (await import('./cluster/primary.js')).runPrimary(config);
  else await (await import('./cluster/serve-process.js')).serveProcess(config);
}

main().catch(async (err) => {
  // What the operator must fix (a setting, a busy port) is said in one message; anything else with its stack.
  const known = err instanceof ConfigError || err instanceof (await import('./transport/http-server.js')).ListenError;
  process.stderr.write(known ? `${err.message}\n` : `Kuma failed to start: ${err?.stack ?? err}\n`);
  process.exit(1);
});
