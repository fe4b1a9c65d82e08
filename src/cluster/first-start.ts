/**
 * What a fresh install prints once: a dev API key (created on an empty store) and a dev admin key (on a
 * store that never had one), with how to reach the server. The keys go to stdout, never to the log.
 *
 * With several workers the primary runs this before starting them, on its own short-lived store handle,
 * so that exactly one process creates the keys and the models are generated once.
 */
import { ensureDevAccount } from '../auth/dev-account.js';
import { ensureDevAdminKey } from '../auth/admin-keys.js';
import type { Config } from '../config/config.js';
import type { Store } from '../store/store.js';

export interface FirstStartKeys {
  apiKey: string | null;
  adminKey: string | null;
}

export async function ensureFirstStartKeys(store: Store, config: Config): Promise<FirstStartKeys> {
  const dev = await ensureDevAccount(store, config.devBalanceUnits);
  const devAdmin = await ensureDevAdminKey(store);
  return { apiKey: dev?.apiKey ?? null, adminKey: devAdmin?.adminKey ?? null };
}

/** How a browser on this machine reaches the server: https:// when it serves TLS. */
export function localBaseUrl(port: number, config: Config): string {
  return `${config.tlsCert ? 'https' : 'http'}://localhost:${port}`;
}

/**
 * The one line that says the server is ready — every model loaded and warm, the port listening — with where
 * to go: the API, and the Studio and its console when they are served.
 */
export function readyLine(port: number, config: Config): string {
  const base = localBaseUrl(port, config);
  const studio = config.studio ? `  ·  Studio ${base}/  ·  console ${base}/#console` : '';
  return `Kuma is ready: API ${base}/openai/v1${studio}`;
}

/** Prints the ready line once the models are warm, or why the server serves without them. */
/**
 * Prints the ready line once the models are warm — through `write` where given (serve-process.ts writes it into
 * the log's buffered destination, so it comes after every "model ready" line, not among them).
 */
export function announceReadiness(
  port: number,
  config: Config,
  modelsReady: Promise<void>,
  write: (text: string) => void = (text) => void process.stdout.write(text),
): void {
  modelsReady.then(
    () => write(`${readyLine(port, config)}\n`),
    (err: Error) => write(`Kuma is serving without its models: ${err.message} (${localBaseUrl(port, config)}/readyz says the same)\n`),
  );
}

export function printBanner(port: number, config: Config, keys: FirstStartKeys, workers: number): void {
  const base = localBaseUrl(port, config);
  const processes = workers > 1 ? `  (${workers} worker processes; SIGHUP replaces them one by one)` : '';
  process.stdout.write(
    [
      '',
      `Kuma is listening on ${base}  (primary surface: ${base}/openai/v1 and ${base}/compat/v1)${processes}`,
      keys.apiKey
        ? `First start: created a dev account with ${config.devBalanceUnits} units of credit. Its API key (shown once, keep it):\n\n    ${keys.apiKey}\n`
        : 'Manage API keys with: npm run keys -- help',
      ...(keys.adminKey
        ? [
            `Created an admin key for the admin API (${base}/admin/v1), not an API key (shown once, keep it; more with npm run keys -- admin create):\n\n    ${keys.adminKey}\n`,
          ]
        : []),
      `Try: curl -H "Authorization: Bearer <key>" ${base}/openai/v1/models`,
      config.modelsManifest ? 'Loading the models: one more line says when they are warm (until then, requests that need one get 503 with Retry-After).' : '',
    ].join('\n') + '\n',
  );
}
