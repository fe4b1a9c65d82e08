/**
 * The ledger as PostgreSQL holds it, read directly (not through Kuma): balances, usage rows and holds of the
 * accounts a load test created, for the cluster kill test's invariants — the usage rows of each account sum to
 * exactly its balance change, and no balance is below zero.
 */
import pg from 'pg';

export interface LedgerSnapshot {
  balances: Map<string, number>;
  /** Sum of cost_micros and number of usage rows, by account. */
  usage: Map<string, { costMicros: number; rows: number }>;
  /** Request ids with usage rows, by account: what was charged. */
  chargedRequests: Set<string>;
  holds: Array<{ accountId: string; requestId: string; amountMicros: number; expiresAt: number }>;
  /** The lowest balance of any account in the database (not only the test's). */
  lowestBalanceAnywhere: number;
}

export async function readLedger(databaseUrl: string, accountIds: string[]): Promise<LedgerSnapshot> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // One snapshot: every figure below from the same moment of the database.
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const balances = await client.query<{ id: string; balance_micros: string }>('SELECT id, balance_micros FROM accounts WHERE id = ANY($1::text[])', [
      accountIds,
    ]);
    const usage = await client.query<{ account_id: string; cost: string; rows: string }>(
      'SELECT account_id, SUM(cost_micros)::text AS cost, COUNT(*)::text AS rows FROM usage_records WHERE account_id = ANY($1::text[]) GROUP BY account_id',
      [accountIds],
    );
    const requests = await client.query<{ request_id: string }>('SELECT DISTINCT request_id FROM usage_records WHERE account_id = ANY($1::text[])', [
      accountIds,
    ]);
    const holds = await client.query<{ account_id: string; request_id: string; amount_micros: string; expires_at: string }>(
      'SELECT account_id, request_id, amount_micros, expires_at FROM holds WHERE account_id = ANY($1::text[]) ORDER BY expires_at',
      [accountIds],
    );
    const lowest = await client.query<{ lowest: string | null }>('SELECT MIN(balance_micros)::text AS lowest FROM accounts');
    await client.query('COMMIT');
    // BIGINTs come back as strings; every figure here is far below 2^53.
    return {
      balances: new Map(balances.rows.map((r) => [r.id, Number(r.balance_micros)])),
      usage: new Map(usage.rows.map((r) => [r.account_id, { costMicros: Number(r.cost), rows: Number(r.rows) }])),
      chargedRequests: new Set(requests.rows.map((r) => r.request_id)),
      holds: holds.rows.map((r) => ({
        accountId: r.account_id,
        requestId: r.request_id,
        amountMicros: Number(r.amount_micros),
        expiresAt: Number(r.expires_at),
      })),
      lowestBalanceAnywhere: Number(lowest.rows[0]?.lowest ?? 0),
    };
  } finally {
    await client.end();
  }
}
