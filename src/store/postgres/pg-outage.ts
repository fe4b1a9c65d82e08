/**
 * Which `pg` failures mean "the database is not reachable right now", and the wrapper that turns them into
 * the Store's StoreUnavailableError. Everything else (a constraint, a bad query, our own RangeError for an
 * unsafe BIGINT) passes through unchanged: retrying would not help.
 */
import type { Store } from '../store.js';
import { StoreUnavailableError } from '../store-errors.js';

/** Socket-level failures: the server is down, restarting, unreachable or gone mid-query. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);
/**
 * SQLSTATEs of an outage: class 08 (connection exception), 57P01–57P03 (admin/crash shutdown, cannot
 * connect now: starting up or in recovery), 53300 (too many connections).
 */
const OUTAGE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);
/**
 * Messages pg 8 gives without a code: a connection that ended under a query ("Connection terminated
 * [unexpectedly | due to connection timeout]"), a client broken by such an error, or the pool's wait for a
 * connection running out. Not "Client was closed": that is our own close(), not the database's outage.
 */
const OUTAGE_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

export function isOutage(error: unknown): error is Error {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || OUTAGE_STATES.has(code) || code.startsWith('08'))) return true;
  return OUTAGE_MESSAGES.test(error.message);
}

/** pg's code (a system error or a SQLSTATE), or 'connection lost' for the coded-less messages above. */
function reasonOf(error: Error): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : 'connection lost';
}

/** `store` with every method's outage failures rethrown as StoreUnavailableError (the cause kept). */
export function reportingOutages(store: Store): Store {
  const wrapped = {} as Record<string, unknown>;
  for (const [name, method] of Object.entries(store)) {
    if (typeof method !== 'function') {
      wrapped[name] = method;
      continue;
    }
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await (method as (...a: unknown[]) => Promise<unknown>).apply(store, args);
      } catch (error) {
        throw isOutage(error) ? new StoreUnavailableError(`${reasonOf(error)}: ${error.message}`, reasonOf(error), { cause: error }) : error;
      }
    };
  }
  return wrapped as unknown as Store;
}
