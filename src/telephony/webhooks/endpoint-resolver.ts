/**
 * Where an account's events go: its webhook (url + signing secret) from the store, cached for a few seconds
 * so that a busy call does not read the database per event, and the outbound-policy verdict on that URL,
 * asked before the first delivery to it and cached likewise (a change made with `npm run keys -- webhook set`
 * reaches a running server within the cache time).
 */
import type { AccountWebhook, Store } from '../../store/store.js';

/** The operator's outbound policy: resolves when Kuma may connect to the URL, rejects (with the reason) when not. */
export type CheckUrl = (url: URL) => Promise<void>;

export type Endpoint = { kind: 'none' } | { kind: 'ok'; url: URL; secret: string } | { kind: 'refused'; host: string; reason: string };

interface Cached<T> {
  expiresAt: number;
  value: Promise<T>;
}

/** Past this many cached entries, expired ones are swept (accounts and URLs come and go). */
const SWEEP_AT = 1024;

export class EndpointResolver {
  private readonly webhooks = new Map<string, Cached<AccountWebhook | undefined>>();
  private readonly verdicts = new Map<string, Cached<string | undefined>>();

  constructor(
    private readonly store: Pick<Store, 'getWebhook'>,
    private readonly checkUrl: CheckUrl,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Rejects only when the store cannot be read (a passing trouble: the sender retries). */
  async resolve(accountId: string): Promise<Endpoint> {
    const webhook = await this.cached(this.webhooks, accountId, () => this.store.getWebhook(accountId));
    if (!webhook) return { kind: 'none' };
    let url: URL;
    try {
      url = new URL(webhook.url);
    } catch {
      return { kind: 'refused', host: '(unparseable)', reason: 'the stored webhook URL is not a valid URL' };
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return { kind: 'refused', host: url.host, reason: `scheme ${url.protocol} is not http(s)` };
    const refusal = await this.cached(this.verdicts, url.href, () => this.verdictOn(url));
    if (refusal !== undefined) return { kind: 'refused', host: url.host, reason: refusal };
    return { kind: 'ok', url, secret: webhook.secret };
  }

  private async verdictOn(url: URL): Promise<string | undefined> {
    try {
      await this.checkUrl(url);
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  private cached<T>(map: Map<string, Cached<T>>, key: string, load: () => Promise<T>): Promise<T> {
    const now = this.now();
    const hit = map.get(key);
    if (hit && hit.expiresAt > now) return hit.value;
    if (map.size >= SWEEP_AT) for (const [k, v] of map) if (v.expiresAt <= now) map.delete(k);
    const value = load();
    map.set(key, { expiresAt: now + this.ttlMs, value });
    // A failed read is not remembered: the next attempt asks the store again.
    value.catch(() => {
      if (map.get(key)?.value === value) map.delete(key);
    });
    return value;
  }
}
