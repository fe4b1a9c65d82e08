/**
 * Which Store a process opens: PostgreSQL when a database URL is configured (KUMA_DATABASE_URL: several
 * nodes share it), else the embedded SQLite file at KUMA_DB_PATH. The server and the keys CLI both open
 * their store here, so they always agree on where accounts and keys live.
 */
import { openPostgresStore } from './postgres/postgres-store.js';
import { openSqliteStore } from './sqlite-store.js';
import type { Store } from './store.js';

export interface StoreLocation {
  /** postgres:// or postgresql:// URL; empty = SQLite. */
  databaseUrl: string;
  dbPath: string;
}

export async function openStore(location: StoreLocation): Promise<Store> {
  return location.databaseUrl ? openPostgresStore(location.databaseUrl) : openSqliteStore(location.dbPath);
}

/** Where the store is, for logs: the PostgreSQL URL without its password, or the SQLite path. */
export function describeStoreLocation(location: StoreLocation): string {
  if (!location.databaseUrl) return `sqlite:${location.dbPath}`;
  // user:password@ → user:***@ (without parsing: socket URLs such as postgres://kuma@/kuma?host=… are not WHATWG URLs).
  return location.databaseUrl.replace(/^(postgres(?:ql)?:\/\/[^:/@?]*):[^@/?]*@/, '$1:***@');
}
