/**
 * The storage interface behind accounts, API keys and the usage ledger. Every method is async so that a
 * networked implementation (PostgreSQL) can follow the embedded SQLite one without changing callers.
 * Money is integer micro-units (1 unit = 1_000_000 micros) so that sums never drift.
 */

export type UsageUnit = 'second' | 'character' | 'token';

export interface Account {
  id: string;
  name: string;
  balanceMicros: number;
  createdAt: string;
}

export interface ApiKeyRecord {
  /** Public identifier of the key (safe to log and show); the key itself is never stored. */
  id: string;
  accountId: string;
  label: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface NewUsageRecord {
  requestId: string;
  accountId: string;
  keyId: string;
  model: string;
  unit: UsageUnit;
  quantity: number;
  unitPriceMicros: number;
  costMicros: number;
}

export interface UsageRecord extends NewUsageRecord {
  id: number;
  createdAt: string;
}

export interface Store {
  createAccount(name: string, balanceMicros: number): Promise<Account>;
  getAccount(id: string): Promise<Account | undefined>;
  listAccounts(): Promise<Account[]>;
  /** Adds (or with a negative amount, removes) funds; returns the account after the change. */
  credit(accountId: string, amountMicros: number): Promise<Account>;

  /** Stores a key by its hash; `id` is the public key id. */
  createKey(accountId: string, keyHash: string, label: string): Promise<ApiKeyRecord>;
  /** Active (not revoked) key with this hash, with its hash for a constant-time comparison. */
  findKeyByHash(keyHash: string): Promise<{ key: ApiKeyRecord; keyHash: string; account: Account } | undefined>;
  listKeys(accountId?: string): Promise<ApiKeyRecord[]>;
  /** Returns false when no active key has this id. */
  revokeKey(keyId: string): Promise<boolean>;

  /**
   * Inserts the records and debits their summed cost from each record's account in ONE transaction:
   * either all rows and the debit land, or nothing does. Returns the balances after the debit.
   */
  recordUsage(records: NewUsageRecord[]): Promise<{ balances: Record<string, number> }>;
  listUsage(filter?: { accountId?: string; requestId?: string }): Promise<UsageRecord[]>;

  countAccounts(): Promise<number>;
  close(): Promise<void>;
}
