/**
 * `npm run keys -- limits …`: shows, sets and clears the rate-limit overrides of an account or of one key.
 * Overrides live in the database, so they hold across restarts; a running server picks them up within
 * its key cache's TTL (KUMA_AUTH_CACHE_TTL_MS, 1 s by default).
 */
import { parseArgs } from 'node:util';
import { applyOverrides, limitSubjectKind, type LimitDefaults, type Limits, type LimitSubjectKind } from '../limits/limits.js';
import type { LimitOverrides, Store } from '../store/store.js';
import { UsageError } from './usage-error.js';

type Output = (line: string) => void;

export const LIMITS_HELP = `  limits show ACCOUNT_ID      The limits in force for the account and each of its keys, and where each comes from
  limits set ACCOUNT_ID|KEY_ID [--requests-per-minute N] [--tokens-per-minute N] [--concurrent N]
                              Override limits of an account (all its keys together) or of one key;
                              0 = unlimited, "default" = back to the configured default
  limits clear ACCOUNT_ID|KEY_ID
                              Drop every override of the account or key`;

const FLAGS = {
  'requests-per-minute': 'requestsPerMinute',
  'tokens-per-minute': 'tokensPerMinute',
  concurrent: 'concurrent',
} as const satisfies Record<string, keyof LimitOverrides>;

const NO_DEFAULTS: LimitDefaults = {
  account: { requestsPerMinute: 0, tokensPerMinute: 0, concurrent: 0 },
  key: { requestsPerMinute: 0, tokensPerMinute: 0, concurrent: 0 },
};

function parseLimit(flag: string, text: string): number | null {
  if (text === 'default') return null;
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new UsageError(`--${flag} must be a whole number ≥ 0 (0 = unlimited) or "default", got "${text}"`);
  }
  return Number(text);
}

/** `600 requests/min (default)`, `unlimited (set)`. */
function describeLimits(limits: Limits, overrides: LimitOverrides): string {
  const one = (value: number, override: number | null, unit: string) =>
    `${value === 0 ? 'unlimited' : `${value} ${unit}`} (${override === null ? 'default' : 'set'})`;
  return [
    `requests ${one(limits.requestsPerMinute, overrides.requestsPerMinute, '/min')}`,
    `tokens ${one(limits.tokensPerMinute, overrides.tokensPerMinute, '/min')}`,
    `concurrent ${one(limits.concurrent, overrides.concurrent, 'at once')}`,
  ].join(', ');
}

/** An account id or a key id, checked to exist; says which it is. */
async function subjectOf(store: Store, id: string): Promise<LimitSubjectKind> {
  const kind = await limitSubjectKind(store, id);
  if (!kind) throw new UsageError(`No account or key with id ${id}`);
  return kind;
}

async function show(positionals: string[], store: Store, out: Output, defaults: LimitDefaults): Promise<void> {
  const [accountId] = positionals;
  if (!accountId || positionals.length > 1) throw new UsageError('Usage: limits show ACCOUNT_ID');
  const account = await store.getAccount(accountId);
  if (!account) throw new UsageError(`No account with id ${accountId}`);
  const overrides = await store.getRateLimits(account.id);
  out(`${account.id}  "${account.name}"  ${describeLimits(applyOverrides(defaults.account, overrides), overrides)}`);
  for (const key of await store.listKeys(account.id)) {
    const keyOverrides = await store.getRateLimits(key.id);
    const state = key.revokedAt ? '  (revoked)' : '';
    out(`  ${key.id}  ${describeLimits(applyOverrides(defaults.key, keyOverrides), keyOverrides)}${state}`);
  }
  out("0 = unlimited. A request must be within both its key's and its account's limits.");
}

export async function limitsCommand(args: string[], store: Store, out: Output, defaults: LimitDefaults = NO_DEFAULTS): Promise<void> {
  const [action, ...rest] = args;
  const options = Object.fromEntries(Object.keys(FLAGS).map((flag) => [flag, { type: 'string' as const }]));
  const { values, positionals } = parseArgs({ args: rest, options, allowPositionals: true, strict: true });
  const flagValues = values as Record<string, string | undefined>;
  if (action === 'show') return show(positionals, store, out, defaults);
  if (action !== 'set' && action !== 'clear') throw new UsageError(`Unknown limits action "${action ?? ''}": expected show, set or clear`);

  const [id] = positionals;
  if (!id || positionals.length > 1) throw new UsageError(`Usage: limits ${action} ACCOUNT_ID|KEY_ID`);
  const kind = await subjectOf(store, id);
  if (action === 'clear') {
    if (Object.values(flagValues).some((v) => v !== undefined)) throw new UsageError('limits clear takes no flags');
    const cleared = await store.clearRateLimits(id);
    out(cleared ? `Cleared the limit overrides of ${kind} ${id}; the defaults apply.` : `${kind} ${id} had no overrides; the defaults apply.`);
    return;
  }
  const changes: Partial<LimitOverrides> = {};
  for (const [flag, field] of Object.entries(FLAGS)) {
    const text = flagValues[flag];
    if (text !== undefined) changes[field] = parseLimit(flag, text);
  }
  if (Object.keys(changes).length === 0) throw new UsageError('limits set needs at least one of --requests-per-minute, --tokens-per-minute, --concurrent');
  const stored = await store.setRateLimits(id, changes);
  const limits = applyOverrides(kind === 'account' ? defaults.account : defaults.key, stored);
  out(`Limits of ${kind} ${id}: ${describeLimits(limits, stored)}`);
  out('A running server applies them within its key cache TTL (KUMA_AUTH_CACHE_TTL_MS, default 1 s).');
}
