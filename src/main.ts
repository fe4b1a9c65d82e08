/**
 * Process entry point (`npm start`): config from the environment, the server, a dev API key printed on
 * first start with an empty store (and an admin key on the first start of a store that never had one),
 * and graceful shutdown on SIGTERM/SIGINT. The keys go to stdout once, never to the log.
 */
import { ConfigError, loadConfig } from './config/config.js';
import { startKuma } from './server.js';
import { ensureDevAccount } from './auth/dev-account.js';
import { ensureDevAdminKey } from './auth/admin-keys.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const server = await startKuma({ config });
  const dev = await ensureDevAccount(server.store, config.devBalanceUnits);
  const devAdmin = await ensureDevAdminKey(server.store);
  const base = `http://localhost:${server.port}`;
  process.stdout.write(
    [
      '',
      `Kuma is listening on ${base}  (primary surface: ${base}/openai/v1 and ${base}/compat/v1)`,
      dev
        ? `First start: created a dev account with ${config.devBalanceUnits} units of credit. Its API key (shown once, keep it):\n\n    ${dev.apiKey}\n`
        : 'Manage API keys with: npm run keys -- help',
      ...(devAdmin
        ? [`Created an admin key for the admin API (${base}/admin/v1), not an API key (shown once, keep it; more with npm run keys -- admin create):\n\n    ${devAdmin.adminKey}\n`]
        : []),
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
