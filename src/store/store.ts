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

/**
 * Money set aside for a request in flight, so that concurrent requests cannot spend the same balance.
 * A hold counts against the account until it is released, settled, or its `expiresAt` (ms since the epoch)
 * passes: a process that dies leaves holds behind, and expiry is what frees them.
 */
/** How a usage write settles a hold (Store.recordUsage). */
export interface RecordUsageOptions {
  /** Settles this hold: dropped in the same transaction. */
  releaseHoldId?: string;
  /** Settles part `part` (1, 2, …) of this hold, which stays, less what the rows debit. */
  partOfHold?: { holdId: string; part: number };
  /** The records' keys must be active, checked in the same transaction (KeyRevokedError otherwise: nothing written). */
  requireActiveKey?: boolean;
}

/** The idempotency key of a usage write: the hold it settles, and which part of it. */
export function settlementIdOf(options: RecordUsageOptions): string | null {
  if (options.partOfHold) return `${options.partOfHold.holdId}#${options.partOfHold.part}`;
  return options.releaseHoldId ?? null;
}

export interface NewHold {
  id: string;
  accountId: string;
  requestId: string;
  amountMicros: number;
  expiresAt: number;
}

export interface HoldOutcome {
  /** True when the hold was taken (or grown); false when the account could not cover it and nothing changed. */
  placed: boolean;
  /** Balance minus every live hold, as seen inside the transaction (after the change when placed). */
  availableMicros: number;
}

/**
 * Rate limits stored for one account or key, overriding the configured defaults field by field: null =
 * not overridden (the default applies), 0 = unlimited.
 */
export interface LimitOverrides {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  concurrent: number | null;
}

/** What the key lookup finds: the key, its account, and both their stored limit overrides. */
export interface FoundKey {
  key: ApiKeyRecord;
  keyHash: string;
  account: Account;
  limits: { account: LimitOverrides; key: LimitOverrides };
}

/**
 * A realtime client secret as stored: the token's hash (never the token), who minted it, when it expires
 * (ms since the epoch) and the session configuration given at minting, in the API shape it came in.
 */
export interface NewClientSecret {
  secretHash: string;
  accountId: string;
  keyId: string;
  /** `ga`: POST /realtime/client_secrets; `beta`: POST /realtime/transcription_sessions. */
  shape: 'ga' | 'beta';
  session: Record<string, unknown>;
  expiresAt: number;
}

export type ClientSecretRecord = NewClientSecret;

/** Where an account's telephony events are POSTed, and the secret that signs them. */
export interface AccountWebhook {
  accountId: string;
  url: string;
  secret: string;
  updatedAt: string;
}

/** One finished phone call: how long, how many caller turns, what was processed and what it cost. */
export interface CallRecord {
  id: string;
  accountId: string;
  keyId: string;
  /** twilio, telnyx, plivo, exotel, vonage, audiosocket. */
  carrier: string;
  /** transcription or relay. */
  mode: string;
  /** The carrier's own call id (Twilio CallSid, the AudioSocket UUID), when it gave one. */
  carrierCallId: string | null;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  turns: number;
  callerSeconds: number;
  charactersSynthesized: number;
  charactersTranslated: number;
  costMicros: number;
  /** caller_hangup, app_ended, app_disconnected, insufficient_quota, error, shutdown, … */
  endReason: string;
}

/** A key of the admin API (/admin/v1); like an API key, stored only as its hash. */
export interface AdminKeyRecord {
  /** `adm_…`: public, safe to log and show. */
  id: string;
  label: string;
  createdAt: string;
  revokedAt: string | null;
}

/** One mutating admin call, as the audit trail keeps it. `detail` never holds key material. */
export interface AdminAuditEntry {
  id: string;
  at: string;
  adminKeyId: string;
  /** account.create, account.credit, key.create, key.revoke. */
  action: string;
  /** The id of the account or key acted on. */
  target: string;
  detail: Record<string, unknown>;
  requestId: string;
}

/** One UTC day of an account's usage records, summed. */
export interface DailyUsage {
  /** YYYY-MM-DD (UTC). */
  date: string;
  /** Distinct request ids. */
  requests: number;
  costMicros: number;
  seconds: number;
  characters: number;
  tokens: number;
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
  findKeyByHash(keyHash: string): Promise<FoundKey | undefined>;
  getKey(keyId: string): Promise<ApiKeyRecord | undefined>;
  listKeys(accountId?: string): Promise<ApiKeyRecord[]>;
  /** Returns false when no active key has this id. */
  revokeKey(keyId: string): Promise<boolean>;
  /**
   * Of these key ids, the ones that are not an active key — revoked, or unknown — in one query: how a process
   * learns that a key with sessions open here was revoked by another (the keys CLI, another node).
   */
  inactiveKeyIds(keyIds: readonly string[]): Promise<string[]>;

  /**
   * Inserts the records and debits their summed cost from each record's account in ONE transaction:
   * either all rows and the debit land, or nothing does. Returns the balances after the debit. With
   * `releaseHoldId`, that hold is dropped in the same transaction (settling a reservation). With
   * `partOfHold`, the hold stays and shrinks by what the rows debit (never below 0), in the same
   * transaction: one part of a reservation settled while the rest stays held (the speech socket's phrases).
   * A settlement (hold id, or hold id and part) written twice inserts and debits nothing the second time.
   */
  recordUsage(records: NewUsageRecord[], options?: RecordUsageOptions): Promise<{ balances: Record<string, number> }>;
  /** Oldest first; `latest`: only the last that many (still oldest first). */
  listUsage(filter?: { accountId?: string; requestId?: string; latest?: number }): Promise<UsageRecord[]>;

  /**
   * In ONE write transaction: drops the account's expired holds (`expiresAt <= now`), then takes the hold
   * only if balance − live holds ≥ max(amount, 1) — an account with nothing available cannot start even
   * free work. Concurrent callers (other connections and processes included) are serialized by the lock.
   */
  placeHold(hold: NewHold, now: number): Promise<HoldOutcome>;
  /** Adds `extraMicros` to a live hold under the same rule as placeHold; throws if the hold is gone. */
  growHold(holdId: string, extraMicros: number, now: number): Promise<HoldOutcome>;
  /** Moves the expiry of these holds (a live process keeps its holds from expiring). */
  renewHolds(holdIds: readonly string[], expiresAt: number): Promise<void>;
  /** Drops a hold; dropping one that is already gone is not an error. */
  releaseHold(holdId: string): Promise<void>;
  /** Balance minus the holds that have not expired at `now`. */
  availableMicros(accountId: string, now: number): Promise<number>;

  /** Stored rate-limit overrides of an account or key id (all null when none are stored). */
  getRateLimits(subject: string): Promise<LimitOverrides>;
  /** Changes the given fields (undefined = unchanged, null = back to the default); returns the result. */
  setRateLimits(subject: string, changes: Partial<LimitOverrides>): Promise<LimitOverrides>;
  /** Drops every override of the subject; false when it had none. */
  clearRateLimits(subject: string): Promise<boolean>;

  /** Stores a client secret (and drops the ones expired at `now`). */
  createClientSecret(secret: NewClientSecret, now: number): Promise<void>;
  /** Removes the secret with this hash and returns it (expired or not), or undefined: each secret is used once. */
  consumeClientSecret(secretHash: string): Promise<ClientSecretRecord | undefined>;

  /** The named server secret, created with `create()` the first time any process asks (then the stored one). */
  serverSecret(name: string, create: () => string): Promise<string>;
  getWebhook(accountId: string): Promise<AccountWebhook | undefined>;
  /** Sets (or with null, removes) the account's webhook endpoint. */
  setWebhook(accountId: string, webhook: { url: string; secret: string } | null): Promise<void>;
  recordCall(call: CallRecord): Promise<void>;
  /** By start time, oldest first; `latest`: only the last that many (still oldest first). */
  listCalls(filter?: { accountId?: string; latest?: number }): Promise<CallRecord[]>;

  /** Stores an admin key by its hash (SHA-256 hex of the whole key). */
  createAdminKey(keyHash: string, label: string): Promise<AdminKeyRecord>;
  /** The active (not revoked) admin key with this hash, with its hash for a constant-time comparison. */
  findAdminKeyByHash(keyHash: string): Promise<{ key: AdminKeyRecord; keyHash: string } | undefined>;
  listAdminKeys(): Promise<AdminKeyRecord[]>;
  /** Returns false when no active admin key has this id. */
  revokeAdminKey(id: string): Promise<boolean>;
  /** Every admin key ever created, revoked ones included (first start creates one when this is 0). */
  countAdminKeys(): Promise<number>;
  recordAdminAudit(entry: Omit<AdminAuditEntry, 'id' | 'at'>): Promise<AdminAuditEntry>;
  /** The latest `limit` entries, newest first. */
  listAdminAudit(limit: number): Promise<AdminAuditEntry[]>;
  /** The account's usage records created on or after `sinceDate` (YYYY-MM-DD, UTC), summed per UTC day, oldest first; days without usage are absent. */
  dailyUsage(accountId: string, sinceDate: string): Promise<DailyUsage[]>;

  countAccounts(): Promise<number>;
  close(): Promise<void>;
}
