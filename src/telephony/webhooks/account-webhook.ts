/**
 * Setting an account's webhook — the URL its call events (telephony, transcription mode) are POSTed to, and
 * the secret that signs them — as `npm run keys -- webhook set` and PUT /admin/v1/accounts/{id}/webhook both
 * do it: the URL checked once here rather than failing at each call, and a new signing secret unless the
 * current one is kept. The secret is returned for showing once; nothing here logs it. A running server's
 * sender reads the change within its endpoint cache time (5 s).
 */
import type { AccountWebhook, Store } from '../../store/store.js';
import { WebhookSettingError } from '../errors.js';
import { newWebhookSecret } from './signature.js';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** An absolute http(s) URL Kuma can POST to, or a WebhookSettingError ('invalid_url') saying what is wrong. */
export function parseWebhookUrl(text: string): URL {
  const refuse = (message: string) => new WebhookSettingError('invalid_url', message);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refuse(`"${text}" is not a URL: expected e.g. https://example.com/kuma/events`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refuse(`Webhook URL must be https:// (or http://), not ${url.protocol}//`);
  if (url.username || url.password) throw refuse('Webhook URL must not carry a user name or password; verify the Kuma-Signature header instead');
  if (url.hash) throw refuse('Webhook URL must not have a #fragment (it is never sent to the server)');
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) throw refuse(`Webhook URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
  return url;
}

export interface WebhookChange {
  /** The webhook as stored now (its secret included: callers show it at most once, log it never). */
  webhook: AccountWebhook;
  /** The new signing secret, to show once; null when the current one was kept. */
  newSecret: string | null;
  /** The account had a webhook before (a new secret then replaces its old one at once). */
  replaced: boolean;
}

/**
 * Points the account's events at `urlText` (checked by parseWebhookUrl). `keepSecret` keeps the current
 * signing secret (refused with 'no_secret_to_keep' when the account has no webhook yet); otherwise a new
 * one is made. The caller has checked that the account exists.
 */
export async function setAccountWebhook(
  store: Pick<Store, 'getWebhook' | 'setWebhook'>,
  accountId: string,
  urlText: string,
  options: { keepSecret?: boolean } = {},
): Promise<WebhookChange> {
  const url = parseWebhookUrl(urlText);
  const current = await store.getWebhook(accountId);
  if (options.keepSecret && !current) throw new WebhookSettingError('no_secret_to_keep', `Account ${accountId} has no webhook yet, so no secret to keep`);
  const newSecret = options.keepSecret ? null : newWebhookSecret();
  await store.setWebhook(accountId, { url: url.href, secret: newSecret ?? current!.secret });
  const webhook = await store.getWebhook(accountId);
  if (!webhook) throw new Error(`The webhook of account ${accountId} was set but cannot be read back`);
  return { webhook, newSecret, replaced: current !== undefined };
}
