/**
 * `npm run keys -- webhook …`: sets, shows and clears the URL an account's call events (telephony,
 * transcription mode) are POSTed to, and its signing secret. The secret is printed once, when it is made;
 * `show` never prints it. A running server picks a change up within its webhook cache time (5 s).
 */
import { parseArgs } from 'node:util';
import type { Store } from '../store/store.js';
import { setAccountWebhook } from '../telephony/webhooks/account-webhook.js';
import { UsageError } from './usage-error.js';

type Output = (line: string) => void;

export const WEBHOOK_HELP = `  webhook set ACCOUNT_ID URL [--keep-secret]
                              POST the account's call events (transcripts, DTMF, call start/end) to URL,
                              signed; prints a new signing secret once (--keep-secret: keep the current one)
  webhook show ACCOUNT_ID     The account's webhook URL (never its secret)
  webhook clear ACCOUNT_ID    Stop sending the account's call events`;

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
    // The URL check and the secret are the domain's (shared with the admin API); runKeysCommand reports its refusals.
    const { webhook, newSecret, replaced } = await setAccountWebhook(store, accountId, positionals[1]!, { keepSecret: values['keep-secret'] });
    const url = new URL(webhook.url);
    out(`Webhook of account ${accountId}: ${url.href}`);
    if (url.protocol === 'http:') out('Warning: http:// sends call transcripts unencrypted; use https:// outside a private network.');
    if (newSecret !== null) {
      out('');
      out(`Signing secret: ${newSecret}`);
      out('');
      out("Save this secret now: it is shown only this once. Check each request's Kuma-Signature header with it");
      out(replaced ? '(the previous secret no longer signs anything).' : '(see "Webhooks" in README.md).');
    }
    out('Kuma connects only to hosts the operator allows (KUMA_OUTBOUND_ALLOW); a running server uses this within 5 s.');
    return;
  }
  if (action === 'show' || action === 'clear') {
    if (positionals.length !== 1) throw new UsageError(`Usage: webhook ${action} ACCOUNT_ID`);
    const accountId = await requireAccount(store, positionals[0], `webhook ${action} ACCOUNT_ID`);
    const current = await store.getWebhook(accountId);
    if (action === 'show') {
      out(
        current ? `${accountId}  ${current.url}  (signing secret set ${current.updatedAt}; not shown)` : `${accountId}  no webhook: call events are not sent`,
      );
      return;
    }
    await store.setWebhook(accountId, null);
    out(current ? `Cleared the webhook of account ${accountId}; its call events are no longer sent.` : `Account ${accountId} had no webhook.`);
    return;
  }
  throw new UsageError(`Unknown webhook action "${action ?? ''}": expected set, show or clear`);
}
