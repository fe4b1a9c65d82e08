/**
 * Key administration from the command line: `npm run keys -- <command>`. Creates accounts and keys,
 * lists them, adds credit, revokes keys, shows recent usage and phone calls, sets account webhooks and
 * manages the admin API's admin keys, on the database named by KUMA_DB_PATH.
 * The logic is `runKeysCommand`, which writes through output functions so tests need not spawn a process.
 */
import { parseArgs } from 'node:util';
import { generateApiKey, hashApiKey } from '../auth/api-keys.js';
import { MICROS_PER_UNIT } from '../config/prices.js';
import { InvalidAmountError } from '../billing/errors.js';
import { formatUnits, parseUnits } from '../billing/units.js';
import { loadConfig } from '../config/config.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { isEntryPoint } from './entry-point.js';
import { UsageError } from './usage-error.js';
import { LIMITS_HELP, limitsCommand } from './keys-limits.js';
import { WEBHOOK_HELP, webhookCommand } from './keys-webhooks.js';
import { ADMIN_HELP, adminCommand } from './keys-admin.js';
import { CALL_ROWS_SHOWN, callLines } from './keys-calls.js';
import { limitDefaultsOf, type LimitDefaults } from '../limits/limits.js';
import { WebhookSettingError } from '../telephony/errors.js';

export type Output = (line: string) => void;

const USAGE_ROWS_SHOWN = 50;

export const HELP_TEXT = `Usage: npm run keys -- <command> [options]

Commands:
  create [--name NAME] [--balance UNITS] [--label LABEL]
                              Create an account with a starting balance, and a key for it
  create --account ACCOUNT_ID [--label LABEL]
                              Create another key for an existing account
  list                        Accounts with their balances, and their keys (never the keys themselves)
  credit ACCOUNT_ID UNITS     Add UNITS to the balance (negative to remove, e.g. -2.5)
  revoke KEY_ID               Revoke a key; requests using it are refused and its open sessions end (running servers: within KUMA_AUTH_CACHE_TTL_MS)
  usage [ACCOUNT_ID]          The last ${USAGE_ROWS_SHOWN} usage records and phone calls, for one account or all
${LIMITS_HELP}
${WEBHOOK_HELP}
${ADMIN_HELP}
  help                        This text

Amounts are in units (1 unit = ${MICROS_PER_UNIT.toLocaleString('en-US')} micros), with up to 6 decimals.
The database is KUMA_DB_PATH (default data/kuma.sqlite).`;

const NEGATIVE_NUMBER = /^-\d+(\.\d+)?$/;

/**
 * parseArgs reads "-2.5" as an unknown short option. A negative number following a `--flag` becomes
 * `--flag=-2.5`; any other one is a positional, so it and what follows are passed after `--`.
 */
function protectNegativeNumbers(args: string[]): string[] {
  const result: string[] = [];
  for (const token of args) {
    const previous = result.at(-1);
    if (!NEGATIVE_NUMBER.test(token) || result.includes('--')) result.push(token);
    else if (previous?.startsWith('--') && previous !== '--' && !previous.includes('=')) result[result.length - 1] = `${previous}=${token}`;
    else result.push('--', token);
  }
  return result;
}

type OptionSpec = Record<string, { type: 'string' }>;

function parse(args: string[], options: OptionSpec, positionalNames: string[], required: number) {
  const { values, positionals } = parseArgs({ args: protectNegativeNumbers(args), options, allowPositionals: true, strict: true });
  if (positionals.length < required) throw new UsageError(`Missing ${positionalNames.slice(positionals.length, required).join(' and ')}`);
  if (positionals.length > positionalNames.length) throw new UsageError(`Unexpected argument "${positionals[positionalNames.length]}"`);
  return { values: values as Record<string, string | undefined>, positionals };
}

async function createCommand(args: string[], store: Store, out: Output): Promise<void> {
  const { values } = parse(args, { name: { type: 'string' }, balance: { type: 'string' }, account: { type: 'string' }, label: { type: 'string' } }, [], 0);
  const label = values.label ?? 'default';
  let account;
  if (values.account !== undefined) {
    if (values.name !== undefined || values.balance !== undefined) {
      throw new UsageError('--name and --balance are for a new account; they cannot be combined with --account (use credit to add funds)');
    }
    account = await store.getAccount(values.account);
    if (!account) throw new UsageError(`No account with id ${values.account}`);
  } else {
    const balanceMicros = values.balance === undefined ? 0 : parseUnits(values.balance);
    account = await store.createAccount(values.name ?? 'default', balanceMicros);
    out(`Created account ${account.id} ("${account.name}") with balance ${formatUnits(account.balanceMicros)}`);
    if (balanceMicros === 0) out(`Note: the balance is 0; requests are refused until you run: npm run keys -- credit ${account.id} UNITS`);
  }
  const apiKey = generateApiKey();
  const key = await store.createKey(account.id, hashApiKey(apiKey), label);
  out(`Created key ${key.id} (label "${key.label}") for account ${account.id}`);
  out('');
  out(`API key: ${apiKey}`);
  out('');
  out('Save this key now: it is shown only this once and cannot be shown again (only its hash is stored).');
}

async function listCommand(args: string[], store: Store, out: Output): Promise<void> {
  parse(args, {}, [], 0);
  const accounts = await store.listAccounts();
  if (accounts.length === 0) {
    out('No accounts yet. Create one with: npm run keys -- create --name NAME --balance UNITS');
    return;
  }
  for (const account of accounts) {
    out(`${account.id}  "${account.name}"  balance ${formatUnits(account.balanceMicros)}  created ${account.createdAt}`);
    const keys = await store.listKeys(account.id);
    if (keys.length === 0) out('  (no keys)');
    for (const key of keys) {
      const state = key.revokedAt ? `revoked ${key.revokedAt}` : 'active';
      out(`  ${key.id}  label "${key.label}"  created ${key.createdAt}  ${state}`);
    }
  }
}

async function creditCommand(args: string[], store: Store, out: Output): Promise<void> {
  const { positionals } = parse(args, {}, ['ACCOUNT_ID', 'UNITS'], 2);
  const [accountId, units] = positionals as [string, string];
  const amountMicros = parseUnits(units, { allowNegative: true });
  if (!(await store.getAccount(accountId))) throw new UsageError(`No account with id ${accountId}`);
  const account = await store.credit(accountId, amountMicros);
  out(
    `${amountMicros < 0 ? 'Debited' : 'Credited'} ${formatUnits(Math.abs(amountMicros))} ${amountMicros < 0 ? 'from' : 'to'} ${account.id}; balance is now ${formatUnits(account.balanceMicros)}`,
  );
}

async function revokeCommand(args: string[], store: Store, out: Output): Promise<void> {
  const { positionals } = parse(args, {}, ['KEY_ID'], 1);
  const keyId = positionals[0]!;
  if (!(await store.revokeKey(keyId))) throw new UsageError(`No active key with id ${keyId} (unknown, or already revoked)`);
  out(`Revoked key ${keyId}; requests using it are refused from now on, and running servers end its open sessions within KUMA_AUTH_CACHE_TTL_MS.`);
}

async function usageCommand(args: string[], store: Store, out: Output): Promise<void> {
  const { positionals } = parse(args, {}, ['ACCOUNT_ID'], 0);
  const accountId = positionals[0];
  if (accountId !== undefined && !(await store.getAccount(accountId))) throw new UsageError(`No account with id ${accountId}`);
  const filter = accountId === undefined ? {} : { accountId };
  const rows = await store.listUsage({ ...filter, latest: USAGE_ROWS_SHOWN });
  if (rows.length === 0) out('No usage recorded yet.');
  for (const r of rows) {
    out(
      `${r.createdAt}  ${r.requestId}  ${r.accountId}  ${r.keyId}  ${r.model}  ${r.quantity} ${r.unit}` +
        ` × ${r.unitPriceMicros} micros = ${formatUnits(r.costMicros)}`,
    );
  }
  const calls = callLines(await store.listCalls({ ...filter, latest: CALL_ROWS_SHOWN }), formatUnits);
  if (calls.length > 0) out('');
  for (const line of calls) out(line);
}

export interface KeysCommandOptions {
  /** The configured default limits, shown beside the overrides by `limits show`. */
  limitDefaults?: LimitDefaults;
}

const COMMANDS: Record<string, (args: string[], store: Store, out: Output, options: KeysCommandOptions) => Promise<void>> = {
  create: createCommand,
  list: listCommand,
  credit: creditCommand,
  revoke: revokeCommand,
  usage: usageCommand,
  limits: (args, store, out, options) => limitsCommand(args, store, out, options.limitDefaults),
  webhook: (args, store, out) => webhookCommand(args, store, out),
  admin: (args, store, out) => adminCommand(args, store, out),
};

/** Runs one command; returns the process exit code. Bad input goes to `err` with a hint, exit code 1. */
export async function runKeysCommand(argv: string[], store: Store, out: Output, err: Output = out, options: KeysCommandOptions = {}): Promise<number> {
  const [command, ...args] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    out(HELP_TEXT);
    return 0;
  }
  const run = command === undefined ? undefined : COMMANDS[command];
  if (!run) {
    err(command === undefined ? 'Missing command.' : `Unknown command "${command}".`);
    err(HELP_TEXT);
    return 1;
  }
  try {
    await run(args, store, out, options);
    return 0;
  } catch (error) {
    // parseArgs reports bad flags as TypeErrors with an ERR_PARSE_ARGS_* code; their messages are clear.
    const isParseError = (error as { code?: unknown }).code?.toString().startsWith('ERR_PARSE_ARGS') ?? false;
    // The domain's refusals of bad input (an amount, a webhook URL) are usage errors here.
    const isBadInput = error instanceof UsageError || error instanceof InvalidAmountError || error instanceof WebhookSettingError;
    if (!isBadInput && !isParseError) throw error;
    // parseArgs appends advice about '--' that does not apply to these commands; keep its first sentence.
    const message = error instanceof Error ? error.message.split(' To specify')[0] : String(error);
    err(`Error: ${message}`);
    err('Run "npm run keys -- help" for usage.');
    return 1;
  }
}

async function main(): Promise<void> {
  let store: Store | undefined;
  try {
    const config = loadConfig();
    store = await openStore(config);
    const options = { limitDefaults: limitDefaultsOf(config) };
    process.exitCode = await runKeysCommand(
      process.argv.slice(2),
      store,
      (l) => console.log(l),
      (l) => console.error(l),
      options,
    );
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  } finally {
    await store?.close();
  }
}

if (isEntryPoint(import.meta.url)) await main();
