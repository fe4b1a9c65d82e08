/**
 * The sessions open in this process — realtime and speech sockets, phone calls — by the API key they act for
 * (a client secret's or a call token's minting key included), so that revoking a key ends them:
 * - revoked by this process (the admin API; the store returned by `withRevocationEnding`): at once;
 * - revoked by another process sharing the store (`npm run keys`, another node): at the next sweep. While
 *   sessions are open, one sweep per period (KUMA_AUTH_CACHE_TTL_MS, the bound new requests already have)
 *   asks the store, in one query, which of their keys are no longer active. No session, no query.
 * What a session does when it ends this way is its own (an error event, then close 1008 `key_revoked`; a
 * call ends `key_revoked`); its charges stop at the revocation itself (ChargeContext.requireActiveKey).
 */
import type { Store } from '../store/store.js';

/** Ends one session because its key was revoked; called at most once. */
export type EndSession = () => void;

export interface KeySessionsOptions {
  /** Sweep period in ms (at least 100). */
  periodMs: number;
  /** A sweep that failed (the store unreachable): sessions go on, and the next sweep asks again. */
  onSweepError?: (err: unknown) => void;
  /** A session's end callback threw (a bug in it): the other sessions are still ended. */
  onEndError?: (err: unknown) => void;
}

export const MIN_SWEEP_PERIOD_MS = 100;

export class KeySessions {
  private readonly byKey = new Map<string, Set<EndSession>>();
  private readonly periodMs: number;
  private timer: NodeJS.Timeout | undefined;
  private sweeping = false;
  private closed = false;

  constructor(
    private readonly store: Pick<Store, 'inactiveKeyIds'>,
    private readonly options: KeySessionsOptions,
  ) {
    this.periodMs = Math.max(MIN_SWEEP_PERIOD_MS, options.periodMs);
  }

  /** Registers a session of `keyId`; returns its unregistration (idempotent), for when it ends on its own. */
  register(keyId: string, end: EndSession): () => void {
    let sessions = this.byKey.get(keyId);
    if (!sessions) this.byKey.set(keyId, (sessions = new Set()));
    sessions.add(end);
    if (!this.timer && !this.closed) this.timer = setInterval(() => void this.sweep(), this.periodMs).unref();
    return () => this.forget(keyId, end);
  }

  /** Sessions open now (all keys). */
  get size(): number {
    let n = 0;
    for (const sessions of this.byKey.values()) n += sessions.size;
    return n;
  }

  /** The key was revoked: every session of it ends now. */
  revoked(keyId: string): void {
    const sessions = this.byKey.get(keyId);
    if (!sessions) return;
    this.byKey.delete(keyId);
    this.stopWhenIdle();
    for (const end of sessions) {
      try {
        end();
      } catch (err) {
        this.options.onEndError?.(err);
      }
    }
  }

  /** Asks the store which keys with sessions here are no longer active, and ends their sessions. */
  async sweep(): Promise<void> {
    if (this.sweeping || this.byKey.size === 0) return;
    this.sweeping = true;
    try {
      const inactive = await this.store.inactiveKeyIds([...this.byKey.keys()]);
      for (const keyId of inactive) this.revoked(keyId);
    } catch (err) {
      this.options.onSweepError?.(err);
    } finally {
      this.sweeping = false;
    }
  }

  /** Stops sweeping (server shutdown); sessions still registered are left to the shutdown. */
  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private forget(keyId: string, end: EndSession): void {
    const sessions = this.byKey.get(keyId);
    if (!sessions?.delete(end)) return;
    if (sessions.size === 0) this.byKey.delete(keyId);
    this.stopWhenIdle();
  }

  private stopWhenIdle(): void {
    if (this.byKey.size > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

/**
 * The store with this process's revocations ending the key's sessions at once (after the revocation is
 * stored). Delegates everything else unchanged; wrap the store every in-process revocation goes through.
 */
export function withRevocationEnding(store: Store, sessions: KeySessions): Store {
  return {
    ...store,
    revokeKey: async (keyId) => {
      const revoked = await store.revokeKey(keyId);
      if (revoked) sessions.revoked(keyId);
      return revoked;
    },
  };
}
