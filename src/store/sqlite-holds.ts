/**
 * Holds (reservations of money for requests in flight) on the embedded SQLite store. The check "balance −
 * live holds covers this" and the insert happen inside one BEGIN IMMEDIATE transaction, so two requests —
 * in this process or in another one sharing the file — can never both spend the same micros.
 */
import type Database from 'better-sqlite3';
import type { HoldOutcome, NewHold } from './store.js';

/** Appended to the store's migrations (schema version 2). */
export const HOLDS_MIGRATION = `
  CREATE TABLE holds (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts(id),
    request_id    TEXT NOT NULL,
    amount_micros INTEGER NOT NULL CHECK (typeof(amount_micros) = 'integer' AND amount_micros >= 0),
    expires_at    INTEGER NOT NULL CHECK (typeof(expires_at) = 'integer')
  );
  CREATE INDEX idx_holds_account ON holds(account_id);
`;

export interface SqliteHolds {
  place(hold: NewHold, now: number): HoldOutcome;
  grow(holdId: string, extraMicros: number, now: number): HoldOutcome;
  renew(holdIds: readonly string[], expiresAt: number): void;
  /** Not a transaction of its own: also runs inside the store's settle (recordUsage) transaction. */
  release(holdId: string): void;
  /** Takes `micros` off a hold (never below 0); not a transaction of its own (runs inside recordUsage's). */
  shrink(holdId: string, micros: number): void;
  available(accountId: string, now: number): number;
}

function assertMicros(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${what} must be a non-negative safe integer, got ${value}`);
}

export function sqliteHolds(db: Database.Database): SqliteHolds {
  const stmt = {
    dropExpired: db.prepare<[string, number]>('DELETE FROM holds WHERE account_id = ? AND expires_at <= ?'),
    // The sum counts only live holds, so an expired one stops counting even before something deletes it.
    available: db.prepare<[number, string], { balance: number | null; held: number }>(
      `SELECT a.balance_micros AS balance,
              (SELECT COALESCE(SUM(h.amount_micros), 0) FROM holds h WHERE h.account_id = a.id AND h.expires_at > ?) AS held
         FROM accounts a WHERE a.id = ?`,
    ),
    insert: db.prepare('INSERT INTO holds (id, account_id, request_id, amount_micros, expires_at) VALUES (?, ?, ?, ?, ?)'),
    get: db.prepare<[string], { account_id: string; expires_at: number }>('SELECT account_id, expires_at FROM holds WHERE id = ?'),
    add: db.prepare<[number, string]>('UPDATE holds SET amount_micros = amount_micros + ? WHERE id = ?'),
    renew: db.prepare<[number, string]>('UPDATE holds SET expires_at = ? WHERE id = ?'),
    release: db.prepare<[string]>('DELETE FROM holds WHERE id = ?'),
    shrink: db.prepare<[number, string]>('UPDATE holds SET amount_micros = MAX(0, amount_micros - ?) WHERE id = ?'),
    dropAllExpired: db.prepare<[number]>('DELETE FROM holds WHERE expires_at <= ?'),
  };

  const available = (accountId: string, now: number): number => {
    const row = stmt.available.get(now, accountId);
    if (!row || row.balance === null) throw new Error(`Unknown account: ${accountId}`);
    return row.balance - row.held;
  };

  /** An account with nothing available cannot start even free work: the same line as the 402 at auth time. */
  const covers = (availableMicros: number, amountMicros: number) => availableMicros >= Math.max(amountMicros, 1);

  const placeTx = db.transaction((hold: NewHold, now: number): HoldOutcome => {
    stmt.dropExpired.run(hold.accountId, now);
    const before = available(hold.accountId, now);
    if (!covers(before, hold.amountMicros)) return { placed: false, availableMicros: before };
    stmt.insert.run(hold.id, hold.accountId, hold.requestId, hold.amountMicros, hold.expiresAt);
    return { placed: true, availableMicros: before - hold.amountMicros };
  });

  const growTx = db.transaction((holdId: string, extraMicros: number, now: number): HoldOutcome => {
    const hold = stmt.get.get(holdId);
    if (!hold || hold.expires_at <= now) throw new Error(`Hold ${holdId} no longer exists`);
    stmt.dropExpired.run(hold.account_id, now);
    const before = available(hold.account_id, now);
    if (!covers(before, extraMicros)) return { placed: false, availableMicros: before };
    stmt.add.run(extraMicros, holdId);
    return { placed: true, availableMicros: before - extraMicros };
  });

  const renewTx = db.transaction((holdIds: readonly string[], expiresAt: number) => {
    for (const id of holdIds) stmt.renew.run(expiresAt, id);
  });

  // Holds of a process that died are gone once expired; clearing them at open keeps the table small.
  stmt.dropAllExpired.run(Date.now());

  return {
    place(hold, now) {
      assertMicros(hold.amountMicros, 'amountMicros');
      assertMicros(hold.expiresAt, 'expiresAt');
      // BEGIN IMMEDIATE: the write lock is taken before the read, so no other connection can slip a hold
      // in between our check and our insert.
      return placeTx.immediate(hold, now);
    },
    grow(holdId, extraMicros, now) {
      assertMicros(extraMicros, 'extraMicros');
      return growTx.immediate(holdId, extraMicros, now);
    },
    renew(holdIds, expiresAt) {
      assertMicros(expiresAt, 'expiresAt');
      if (holdIds.length > 0) renewTx.immediate(holdIds, expiresAt);
    },
    release(holdId) {
      stmt.release.run(holdId);
    },
    shrink(holdId, micros) {
      if (micros > 0) stmt.shrink.run(micros, holdId);
    },
    available,
  };
}
