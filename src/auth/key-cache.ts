/**
 * Authenticated keys served from memory: a request presenting a key seen in the last `ttlMs` skips the
 * SQLite lookup. What the cache holds — the key record, its account and their limit overrides — changes
 * in two ways, each with its bound:
 * - by this process (the store returned by `withKeyCacheInvalidation`: revocation, credit, limits): the
 *   whole cache is dropped at once, so the next request sees the change;
 * - by another process sharing the database (the keys CLI): within `ttlMs` (default 1 s).
 * Only keys that authenticate are cached: an unknown key always reaches the store, so a flood of made-up
 * keys cannot fill memory. Balances are not decided from here: the 402 check and holds read the store.
 */
import type { FoundKey, Store } from '../store/store.js';
import type { KeyLookup } from './api-keys.js';

export interface KeyCacheOptions {
  /** 0 turns caching off. */
  ttlMs: number;
  /** Bound on memory: the oldest entry goes when a new one would pass it. */
  maxEntries?: number;
  now?: () => number;
}

interface Entry {
  found: FoundKey;
  expiresAt: number;
}

export class KeyCache implements KeyLookup {
  private readonly entries = new Map<string, Entry>();
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly store: KeyLookup,
    private readonly options: KeyCacheOptions,
  ) {
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  async findKeyByHash(keyHash: string): Promise<FoundKey | undefined> {
    const now = this.now();
    const hit = this.entries.get(keyHash);
    if (hit && hit.expiresAt > now) return hit.found;
    const found = await this.store.findKeyByHash(keyHash);
    if (hit) this.entries.delete(keyHash);
    if (found && this.options.ttlMs > 0) {
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(keyHash, { found, expiresAt: now + this.options.ttlMs });
    }
    return found;
  }

  invalidate(): void {
    this.entries.clear();
  }
}

/**
 * The store with every change to what the cache holds dropping the cache, for this process's own writes
 * (the dev account, tests, an embedder). Delegates everything else unchanged.
 */
export function withKeyCacheInvalidation(store: Store, cache: KeyCache): Store {
  const after = <T>(result: Promise<T>): Promise<T> => result.finally(() => cache.invalidate());
  return {
    ...store,
    revokeKey: (keyId) => after(store.revokeKey(keyId)),
    credit: (accountId, amount) => after(store.credit(accountId, amount)),
    setRateLimits: (subject, changes) => after(store.setRateLimits(subject, changes)),
    clearRateLimits: (subject) => after(store.clearRateLimits(subject)),
  };
}
