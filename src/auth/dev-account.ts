/**
 * First start on an empty store: create a dev account with a balance and one key, so `npm start` is
 * usable at once. The key is returned for printing to the operator's terminal, never logged.
 */
import type { Store } from '../store/store.js';
import { MICROS_PER_UNIT } from '../config/prices.js';
import { generateApiKey, hashApiKey } from './api-keys.js';

export async function ensureDevAccount(store: Store, balanceUnits: number): Promise<{ apiKey: string; accountId: string } | null> {
  if ((await store.countAccounts()) > 0) return null;
  const account = await store.createAccount('dev', Math.round(balanceUnits * MICROS_PER_UNIT));
  const apiKey = generateApiKey();
  await store.createKey(account.id, hashApiKey(apiKey), 'dev key (created on first start)');
  return { apiKey, accountId: account.id };
}
