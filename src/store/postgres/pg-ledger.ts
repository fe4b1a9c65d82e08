/**
 * The usage ledger and holds on the PostgreSQL store. Every change to what an account may spend — taking or
 * growing a hold, settling (usage rows + debit + the hold's release) — first locks the account's row
 * (SELECT … FOR UPDATE), so checks and writes from any number of connections and nodes run one after the
 * other per account: balance − live holds can never be spent twice, exactly as SQLite's single writer.
 *
 * Idempotency of usage writes: a request id is NOT unique — one settlement writes several rows for the same
 * request (seconds + characters for speech translation), and a realtime session or a phone call settles many
 * times under one request id, possibly with identical rows (two turns of the same length). What identifies
 * one write is the settlement: its hold id (`releaseHoldId`, random per reservation, closed once), or for one
 * part of a reservation settled while the rest stays held (`partOfHold`) the hold id and the part's number
 * (`hold_…#3`). Each row is stored with (settlement_id = that id, line = its index in the batch), UNIQUE together; a retried
 * recordUsage of the same settlement (the first COMMIT landed but its answer was lost) inserts nothing, and
 * only rows actually inserted are debited, so it never debits twice. Writes without a hold id (NULL) are
 * not deduplicated. The SQLite store applies the same rule (its migration 7).
 */
import type pg from 'pg';
import { settlementIdOf, type HoldOutcome, type NewHold, type NewUsageRecord, type Store } from '../store.js';
import { addToBalance, inactiveKeysIn } from './pg-accounts.js';
import { KeyRevokedError } from '../store-errors.js';
import { assertSafeInteger, nowIso, transaction, type Queryable } from './pg-db.js';
import { toUsage, type UsageRow } from '../store-rows.js';

type LedgerMethods = Pick<Store, 'recordUsage' | 'listUsage' | 'placeHold' | 'growHold' | 'renewHolds' | 'releaseHold' | 'availableMicros'>;

const USAGE_COLUMNS = 'id, request_id, account_id, key_id, model, unit, quantity, unit_price_micros, cost_micros, created_at';

function assertMicros(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${what} must be a non-negative safe integer, got ${value}`);
}

/** An account with nothing available cannot start even free work: the same line as the 402 at auth time. */
const covers = (availableMicros: number, amountMicros: number) => availableMicros >= Math.max(amountMicros, 1);

/**
 * Locks the accounts' rows until the transaction ends, in id order (two settlements touching the same
 * accounts never wait on each other in a cycle); throws for an unknown account.
 */
async function lockAccounts(db: Queryable, accountIds: string[]): Promise<Map<string, number>> {
  const ids = [...new Set(accountIds)].sort();
  const { rows } = await db.query<{ id: string; balance_micros: number }>(
    'SELECT id, balance_micros FROM accounts WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE',
    [ids],
  );
  const balances = new Map(rows.map((r) => [r.id, r.balance_micros]));
  for (const id of ids) if (!balances.has(id)) throw new Error(`Unknown account: ${id}`);
  return balances;
}

/** Balance minus live holds, read inside the caller's transaction (after lockAccounts when it will write). */
async function availableIn(db: Queryable, accountId: string, now: number): Promise<number> {
  const { rows } = await db.query<{ balance: number; held: number }>(
    `SELECT a.balance_micros AS balance,
            (SELECT COALESCE(SUM(h.amount_micros), 0)::bigint FROM holds h WHERE h.account_id = a.id AND h.expires_at > $1) AS held
       FROM accounts a WHERE a.id = $2`,
    [now, accountId],
  );
  if (!rows[0]) throw new Error(`Unknown account: ${accountId}`);
  return rows[0].balance - rows[0].held;
}

async function insertUsage(db: Queryable, r: NewUsageRecord, createdAt: string, settlementId: string | null, line: number | null): Promise<boolean> {
  const result = await db.query(
    `INSERT INTO usage_records
       (request_id, account_id, key_id, model, unit, quantity, unit_price_micros, cost_micros, created_at, settlement_id, line)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (settlement_id, line) DO NOTHING`,
    [r.requestId, r.accountId, r.keyId, r.model, r.unit, r.quantity, r.unitPriceMicros, r.costMicros, createdAt, settlementId, line],
  );
  return result.rowCount === 1;
}

export function pgLedger(pool: pg.Pool): LedgerMethods {
  return {
    async recordUsage(records, options = {}) {
      for (const r of records) {
        assertSafeInteger(r.costMicros, 'costMicros');
        assertSafeInteger(r.unitPriceMicros, 'unitPriceMicros');
      }
      const settlementId = settlementIdOf(options);
      return transaction(pool, async (db) => {
        await lockAccounts(
          db,
          records.map((r) => r.accountId),
        );
        if (options.requireActiveKey) {
          const inactive = await inactiveKeysIn(
            db,
            records.map((r) => r.keyId),
            true,
          );
          if (inactive.length > 0) throw new KeyRevokedError(inactive[0]!);
        }
        // Settling a reservation: the hold goes in the same transaction as the debit, so the money is never
        // counted twice (held and debited) nor for a moment neither.
        if (options.releaseHoldId !== undefined) await db.query('DELETE FROM holds WHERE id = $1', [options.releaseHoldId]);
        const createdAt = nowIso();
        const debits = new Map<string, number>(records.map((r) => [r.accountId, 0]));
        for (const [line, r] of records.entries()) {
          const inserted = await insertUsage(db, r, createdAt, settlementId, settlementId === null ? null : line);
          if (inserted) debits.set(r.accountId, debits.get(r.accountId)! + r.costMicros);
        }
        const balances: Record<string, number> = {};
        for (const [accountId, total] of debits) balances[accountId] = (await addToBalance(db, accountId, -total)).balanceMicros;
        const debited = [...debits.values()].reduce((a, b) => a + b, 0);
        if (options.partOfHold && debited > 0) {
          await db.query('UPDATE holds SET amount_micros = GREATEST(0, amount_micros - $1) WHERE id = $2', [debited, options.partOfHold.holdId]);
        }
        return { balances };
      });
    },
    async listUsage(filter = {}) {
      const where: string[] = [];
      const params: (string | number)[] = [];
      if (filter.accountId !== undefined) {
        params.push(filter.accountId);
        where.push(`account_id = $${params.length}`);
      }
      if (filter.requestId !== undefined) {
        params.push(filter.requestId);
        where.push(`request_id = $${params.length}`);
      }
      let sql = `SELECT ${USAGE_COLUMNS} FROM usage_records${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
      if (filter.latest !== undefined) {
        params.push(filter.latest);
        sql = `SELECT * FROM (${sql} ORDER BY id DESC LIMIT $${params.length}) latest`;
      }
      const { rows } = await pool.query<UsageRow>(`${sql} ORDER BY id`, params);
      return rows.map(toUsage);
    },

    async placeHold(hold: NewHold, now: number): Promise<HoldOutcome> {
      assertMicros(hold.amountMicros, 'amountMicros');
      assertMicros(hold.expiresAt, 'expiresAt');
      return transaction(pool, async (db) => {
        await lockAccounts(db, [hold.accountId]);
        await db.query('DELETE FROM holds WHERE account_id = $1 AND expires_at <= $2', [hold.accountId, now]);
        const before = await availableIn(db, hold.accountId, now);
        if (!covers(before, hold.amountMicros)) return { placed: false, availableMicros: before };
        await db.query('INSERT INTO holds (id, account_id, request_id, amount_micros, expires_at) VALUES ($1, $2, $3, $4, $5)', [
          hold.id,
          hold.accountId,
          hold.requestId,
          hold.amountMicros,
          hold.expiresAt,
        ]);
        return { placed: true, availableMicros: before - hold.amountMicros };
      });
    },
    async growHold(holdId, extraMicros, now) {
      assertMicros(extraMicros, 'extraMicros');
      return transaction(pool, async (db) => {
        const found = await db.query<{ account_id: string }>('SELECT account_id FROM holds WHERE id = $1', [holdId]);
        if (!found.rows[0]) throw new Error(`Hold ${holdId} no longer exists`);
        await lockAccounts(db, [found.rows[0].account_id]);
        // Read again under the account's lock: a settlement may have dropped the hold in between.
        const hold = await db.query<{ account_id: string; expires_at: number }>('SELECT account_id, expires_at FROM holds WHERE id = $1', [holdId]);
        if (!hold.rows[0] || hold.rows[0].expires_at <= now) throw new Error(`Hold ${holdId} no longer exists`);
        const accountId = hold.rows[0].account_id;
        await db.query('DELETE FROM holds WHERE account_id = $1 AND expires_at <= $2', [accountId, now]);
        const before = await availableIn(db, accountId, now);
        if (!covers(before, extraMicros)) return { placed: false, availableMicros: before };
        await db.query('UPDATE holds SET amount_micros = amount_micros + $1 WHERE id = $2', [extraMicros, holdId]);
        return { placed: true, availableMicros: before - extraMicros };
      });
    },
    async renewHolds(holdIds, expiresAt) {
      assertMicros(expiresAt, 'expiresAt');
      if (holdIds.length === 0) return;
      await pool.query('UPDATE holds SET expires_at = $1 WHERE id = ANY($2::text[])', [expiresAt, [...holdIds]]);
    },
    async releaseHold(holdId) {
      await pool.query('DELETE FROM holds WHERE id = $1', [holdId]);
    },
    async availableMicros(accountId, now) {
      return availableIn(pool, accountId, now);
    },
  };
}
