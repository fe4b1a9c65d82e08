/**
 * Process entry point (`npm start`): config from the environment, the server, a dev key printed on first
 * start with an empty store, and graceful shutdown on SIGTERM/SIGINT.
 */
import { ConfigError, loadConfig } from './config/config.js';
import { startKuma } from './server.js';
import { ensureDevAccount } from './auth/dev-account.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const server = await startKuma({ config });
  const dev = await ensureDevAccount(server.store, config.devBalanceUnits);
  const base = `http://localhost:${server.port}`;
  process.stdout.write(
    [
      '',
      `Kuma is listening on ${base}  (primary surface: ${base}/openai/v1 and ${base}/compat/v1)`,
      dev
        ? `First start: created a dev account with ${config.devBalanceUnits} units of credit. Its API key (shown once, keep it):\n\n    ${dev.apiKey}\n`
        : 'Manage API keys with: npm run keys -- help',
      `Try: curl -H "Authorization: Bearer <key>" ${base}/openai/v1/models`,
      '',
    ].join('\n') + '\n',
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.logger.info({ signal }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err) => {
  process.stderr.write(err instanceof ConfigError ? `${err.message}\n` : `Kuma failed to start: ${err?.stack ?? err}\n`);
  process.exit(1);
});
