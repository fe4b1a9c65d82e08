/**
 * What limits apply to a request: the configured defaults for accounts and for keys, overridden field by
 * field by what the store holds for that account or key (`npm run keys -- limits set`). 0 = unlimited.
 */
import type { Config } from '../config/config.js';
import type { LimitOverrides, Store } from '../store/store.js';
import type { LimitSubject } from './rate-limiter.js';

export interface Limits {
  requestsPerMinute: number;
  /** Per-minute amount: seconds of audio, characters or tokens, as the ledger records them. */
  tokensPerMinute: number;
  /** Requests in flight at once (a streamed response counts until its last byte has gone). */
  concurrent: number;
}

export interface LimitDefaults {
  account: Limits;
  key: Limits;
}

export const UNLIMITED: Limits = Object.freeze({ requestsPerMinute: 0, tokensPerMinute: 0, concurrent: 0 });

export function applyOverrides(defaults: Limits, overrides: LimitOverrides | undefined): Limits {
  if (!overrides) return defaults;
  return {
    requestsPerMinute: overrides.requestsPerMinute ?? defaults.requestsPerMinute,
    tokensPerMinute: overrides.tokensPerMinute ?? defaults.tokensPerMinute,
    concurrent: overrides.concurrent ?? defaults.concurrent,
  };
}

/** The two subjects a request is limited as: its account (all its keys together) and its key. */
export function limitSubjects(
  defaults: LimitDefaults,
  caller: { account: { id: string }; key: { id: string }; limits?: { account: LimitOverrides; key: LimitOverrides } },
): LimitSubject[] {
  return [
    { id: caller.account.id, scope: `account ${caller.account.id}`, limits: applyOverrides(defaults.account, caller.limits?.account) },
    { id: caller.key.id, scope: `key ${caller.key.id}`, limits: applyOverrides(defaults.key, caller.limits?.key) },
  ];
}

export function limitDefaultsOf(config: Config): LimitDefaults {
  return {
    account: { requestsPerMinute: config.accountRequestsPerMinute, tokensPerMinute: config.accountTokensPerMinute, concurrent: config.accountConcurrent },
    key: { requestsPerMinute: config.keyRequestsPerMinute, tokensPerMinute: config.keyTokensPerMinute, concurrent: config.keyConcurrent },
  };
}

/** What rate-limit overrides can be set on: an account (all its keys together) or one API key. */
export type LimitSubjectKind = 'account' | 'key';

/** Whether `id` is an account's or an API key's (a revoked key included), or undefined for neither. */
export async function limitSubjectKind(store: Pick<Store, 'getAccount' | 'getKey'>, id: string): Promise<LimitSubjectKind | undefined> {
  if (await store.getAccount(id)) return 'account';
  if (await store.getKey(id)) return 'key';
  return undefined;
}
