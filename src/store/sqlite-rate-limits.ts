/**
 * Rate-limit overrides on the embedded SQLite store: one row per account or key whose limits differ from
 * the configured defaults. A NULL column means "not overridden" (the default applies), 0 means unlimited.
 */
import type Database from 'better-sqlite3';
import type { LimitOverrides } from './store.js';
import { toOverrides, type LimitColumns } from './store-rows.js';

/**
 * Appended to the store's migrations. A new table only, so an existing database file gains it on its next
 * open and keeps every row it had. `subject` is an account id (acct_…) or a key id (key_…).
 */
export const RATE_LIMITS_MIGRATION = `
  CREATE TABLE rate_limits (
    subject             TEXT PRIMARY KEY,
    requests_per_minute INTEGER CHECK (requests_per_minute IS NULL OR requests_per_minute >= 0),
    tokens_per_minute   INTEGER CHECK (tokens_per_minute IS NULL OR tokens_per_minute >= 0),
    concurrent          INTEGER CHECK (concurrent IS NULL OR concurrent >= 0)
  );
`;

export interface SqliteRateLimits {
  get(subject: string): LimitOverrides;
  /** Sets the given fields (undefined = leave as is, null = back to the default). */
  set(subject: string, changes: Partial<LimitOverrides>): LimitOverrides;
  clear(subject: string): boolean;
}

function assertLimit(value: number | null | undefined, what: string): void {
  if (value === null || value === undefined) return;
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${what} must be a non-negative integer, got ${value}`);
}

export function sqliteRateLimits(db: Database.Database): SqliteRateLimits {
  const stmt = {
    get: db.prepare<[string], LimitColumns>('SELECT requests_per_minute, tokens_per_minute, concurrent FROM rate_limits WHERE subject = ?'),
    upsert: db.prepare(
      `INSERT INTO rate_limits (subject, requests_per_minute, tokens_per_minute, concurrent) VALUES (?, ?, ?, ?)
       ON CONFLICT (subject) DO UPDATE SET requests_per_minute = excluded.requests_per_minute,
         tokens_per_minute = excluded.tokens_per_minute, concurrent = excluded.concurrent`,
    ),
    clear: db.prepare<[string]>('DELETE FROM rate_limits WHERE subject = ?'),
  };
  const get = (subject: string) => toOverrides(stmt.get.get(subject));
  // Read and write in one IMMEDIATE transaction: two CLI runs setting different fields keep both.
  const setTx = db.transaction((subject: string, changes: Partial<LimitOverrides>) => {
    const merged = { ...get(subject), ...Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) } as LimitOverrides;
    stmt.upsert.run(subject, merged.requestsPerMinute, merged.tokensPerMinute, merged.concurrent);
    return merged;
  });
  return {
    get,
    set(subject, changes) {
      assertLimit(changes.requestsPerMinute, 'requestsPerMinute');
      assertLimit(changes.tokensPerMinute, 'tokensPerMinute');
      assertLimit(changes.concurrent, 'concurrent');
      return setTx.immediate(subject, changes);
    },
    clear(subject) {
      return stmt.clear.run(subject).changes > 0;
    },
  };
}
