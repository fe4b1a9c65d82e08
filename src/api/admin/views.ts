/**
 * How the admin API shows accounts and keys: snake_case, money as micros and as a units string, and never
 * a key's hash. Also the 404s of an unknown account, shared by every route under /accounts/:id.
 */
import { formatUnits } from '../../billing/units.js';
import type { Account, ApiKeyRecord, Store } from '../../store/store.js';
import { ApiError } from '../errors.js';
import type { AdminDeps } from './admin-route.js';

export interface AccountView {
  id: string;
  name: string;
  balance_micros: number;
  balance: string;
  available_micros: number;
  available: string;
  created_at: string;
  active_keys: number;
}

export interface KeyView {
  id: string;
  account_id: string;
  label: string;
  created_at: string;
  revoked_at: string | null;
}

/** `activeKeys`: the account's keys not revoked, counted by the caller (one listing serves every account of a page). */
export async function accountView(deps: AdminDeps, account: Account, activeKeys: number): Promise<AccountView> {
  // The balance less live holds: what the 402 check compares a request's cost with.
  const available = await deps.store.availableMicros(account.id, (deps.now ?? Date.now)());
  return {
    id: account.id,
    name: account.name,
    balance_micros: account.balanceMicros,
    balance: formatUnits(account.balanceMicros),
    available_micros: available,
    available: formatUnits(available),
    created_at: account.createdAt,
    active_keys: activeKeys,
  };
}

export function keyView(key: ApiKeyRecord): KeyView {
  return { id: key.id, account_id: key.accountId, label: key.label, created_at: key.createdAt, revoked_at: key.revokedAt };
}

export function countActive(keys: readonly ApiKeyRecord[]): number {
  return keys.filter((k) => k.revokedAt === null).length;
}

export async function requireAccount(store: Store, id: string): Promise<Account> {
  const account = await store.getAccount(id);
  if (!account) throw new ApiError('account_not_found', 'No account with this id.', { param: 'id' });
  return account;
}
