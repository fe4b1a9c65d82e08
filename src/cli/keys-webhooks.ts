/**
 * `npm run keys -- webhook …`: sets, shows and clears the URL an account's call events (telephony,
 * transcription mode) are POSTed to, and its signing secret. The secret is printed once, when it is made;
 * `show` never prints it. A running server picks a change up within its webhook cache time (5 s).
 */
import { parseArgs } from 'node:util';
import type { Store } from '../store/store.js';
import { newWebhookSecret } from '../telephony/webhooks/signature.js';
import { UsageError } from './usage-error.js';

type Output = (line: string) => void;

export const WEBHOOK_HELP = `  webhook set ACCOUNT_ID URL [--keep-secret]
                              POST the account's call events (transcripts, DTMF, call start/end) to URL,
                              signed; prints a new signing secret once (--keep-secret: keep the current one)
  webhook show ACCOUNT_ID     The account's webhook URL (never its secret)
  webhook clear ACCOUNT_ID    Stop sending the account's call events`;

const MAX_URL_LENGTH = 2048;

/** An absolute http(s) URL Kuma can POST to; anything else is refused here rather than failing at each call. */
export function parseWebhookUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`"${text}" is not a URL: expected e.g. https://example.com/kuma/events`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UsageError(`Webhook URL must be https:// (or http://), not ${url.protocol}//`);
  if (url.username || url.password) throw new UsageError('Webhook URL must not carry a user name or password; verify the Kuma-Signature header instead');
  if (url.hash) throw new UsageError('Webhook URL must not have a #fragment (it is never sent to the server)');
  if (url.href.length > MAX_URL_LENGTH) throw new UsageError(`Webhook URL is longer than ${MAX_URL_LENGTH} characters`);
  return url;
}

async function requireAccount(store: Store, accountId: string | undefined, usage: string): Promise<string> {
  if (!accountId) throw new UsageError(`Usage: ${usage}`);
  if (!(await store.getAccount(accountId))) throw new UsageError(`No account with id ${accountId}`);
  return accountId;
}

export async function webhookCommand(args: string[], store: Store, out: Output): Promise<void> {
  const [action, ...rest] = args;
  const { values, positionals } = parseArgs({ args: rest, options: { 'keep-secret': { type: 'boolean' } }, allowPositionals: true, strict: true });
  if (action !== 'set' && values['keep-secret']) throw new UsageError('--keep-secret is an option of webhook set');

  if (action === 'set') {
    if (positionals.length !== 2) throw new UsageError('Usage: webhook set ACCOUNT_ID URL [--keep-secret]');
    const accountId = await requireAccount(store, positionals[0], 'webhook set ACCOUNT_ID URL');
    const url = parseWebhookUrl(positionals[1]!);
    const current = await store.getWebhook(accountId);
    if (values['keep-secret'] && !current) throw new UsageError(`Account ${accountId} has no webhook yet, so no secret to keep`);
    const secret = values['keep-secret'] ? current!.secret : newWebhookSecret();
    await store.setWebhook(accountId, { url: url.href, secret });
    out(`Webhook of account ${accountId}: ${url.href}`);
    if (url.protocol === 'http:') out('Warning: http:// sends call transcripts unencrypted; use https:// outside a private network.');
    if (!values['keep-secret']) {
      out('');
      out(`Signing secret: ${secret}`);
      out('');
      out('Save this secret now: it is shown only this once. Check each request\'s Kuma-Signature header with it');
      out(current ? '(the previous secret no longer signs anything).' : '(see "Webhooks" in README.md).');
    }
    out('Kuma connects only to hosts the operator allows (KUMA_OUTBOUND_ALLOW); a running server uses this within 5 s.');
    return;
  }
  if (action === 'show' || action === 'clear') {
    if (positionals.length !== 1) throw new UsageError(`Usage: webhook ${action} ACCOUNT_ID`);
    const accountId = await requireAccount(store, positionals[0], `webhook ${action} ACCOUNT_ID`);
    const current = await store.getWebhook(accountId);
    if (action === 'show') {
      out(current ? `${accountId}  ${current.url}  (signing secret set ${current.updatedAt}; not shown)` : `${accountId}  no webhook: call events are not sent`);
      return;
    }
    await store.setWebhook(accountId, null);
    out(current ? `Cleared the webhook of account ${accountId}; its call events are no longer sent.` : `Account ${accountId} had no webhook.`);
    return;
  }
  throw new UsageError(`Unknown webhook action "${action ?? ''}": expected set, show or clear`);
}
