/**
 * The PostgreSQL store's plumbing: the connection pool (BIGINT columns parsed to JS numbers, refusing any
 * value past 2^53), and `transaction()`, which runs a function on one pooled connection between BEGIN and
 * COMMIT (ROLLBACK on any error).
 */
import pg from 'pg';

/**
 * Connections per process. Every request touches the store a few times (hold, settle), each a short
 * transaction; 10 keeps a node well below PostgreSQL's default max_connections of 100 with several nodes.
 */
export const POOL_MAX = 10;

/** How long taking a connection may wait: for a free pooled one, or for a new one to connect. */
export const CONNECT_TIMEOUT_MS = 5000;

const INT8_OID = 20;

/** BIGINT → number: money is micros and must stay exact, so a value JS cannot represent is an error. */
export function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`BIGINT ${text} is outside JavaScript's safe integer range`);
  return value;
}

export function assertSafeInteger(value: number, what: string): void {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${what} must be a safe integer number of micros, got ${value}`);
}

export type Queryable = Pick<pg.PoolClient, 'query'>;

export function createPool(url: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: POOL_MAX,
    // Without it, a host that drops packets (rather than refusing) holds a request until the kernel's TCP
    // timeout, minutes; with it the request fails as an outage (503, Retry-After) in seconds.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // Our own parser for BIGINT only, on this pool only (pg.types is process-wide and shared with others).
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle pooled connection that dies (server restart) emits 'error' on the pool; without a listener that
  // would crash the process. The next query simply opens a new connection.
  pool.on('error', () => {});
  return pool;
}

/** Runs `fn` inside BEGIN … COMMIT on one connection; any error rolls back and is rethrown. */
export async function transaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    throw error;
  } finally {
    // A connection whose ROLLBACK failed is in an unknown state: destroy it instead of pooling it.
    client.release(broken);
  }
}

export const nowIso = () => new Date().toISOString();
