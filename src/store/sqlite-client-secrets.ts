/**
 * Realtime client secrets on the embedded SQLite store: short-lived tokens that a browser presents in place
 * of an API key (src/auth/client-secrets.ts). Only the token's hash is stored, with the account and key that
 * minted it, its expiry, and the session configuration given at minting.
 */
import type Database from 'better-sqlite3';
import type { ClientSecretRecord, NewClientSecret } from './store.js';
import { toClientSecret, type SecretRow } from './store-rows.js';

/** Appended to the store's migrations: a new table only, so existing files keep every row they had. */
export const CLIENT_SECRETS_MIGRATION = `
  CREATE TABLE client_secrets (
    secret_hash  TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts(id),
    key_id       TEXT NOT NULL,
    shape        TEXT NOT NULL,
    session_json TEXT NOT NULL,
    expires_at   INTEGER NOT NULL,
    created_at   TEXT NOT NULL
  );
  CREATE INDEX idx_client_secrets_expiry ON client_secrets(expires_at);
`;

export interface SqliteClientSecrets {
  insert(secret: NewClientSecret, now: number): void;
  consume(secretHash: string): ClientSecretRecord | undefined;
}

export function sqliteClientSecrets(db: Database.Database): SqliteClientSecrets {
  const insert = db.prepare(
    'INSERT INTO client_secrets (secret_hash, account_id, key_id, shape, session_json, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  // Expired secrets are dropped as new ones are minted: the table holds at most ten minutes of mints.
  const prune = db.prepare('DELETE FROM client_secrets WHERE expires_at <= ?');
  // One statement: two upgrades racing with one secret cannot both get the row (single use).
  const consume = db.prepare<[string], SecretRow>('DELETE FROM client_secrets WHERE secret_hash = ? RETURNING *');
  return {
    insert(secret, now) {
      db.transaction(() => {
        prune.run(now);
        insert.run(
          secret.secretHash,
          secret.accountId,
          secret.keyId,
          secret.shape,
          JSON.stringify(secret.session),
          secret.expiresAt,
          new Date(now).toISOString(),
        );
      }).immediate();
    },
    consume(secretHash) {
      const row = consume.get(secretHash);
      return row && toClientSecret(row);
    },
  };
}
