/**
 * An account's webhook over the admin API — where its call events (telephony, transcription mode) are
 * POSTed — as `npm run keys -- webhook show|set|clear` does it, with the same URL check and secret
 * (src/telephony/webhooks/account-webhook.ts). The signing secret is in PUT's answer when it is made and
 * nowhere else: never in GET, the audit trail or the log. A running server's sender reads a change within
 * its endpoint cache time (5 s). Setting and clearing are audited.
 */
import type { AccountWebhook } from '../../store/store.js';
import { setAccountWebhook } from '../../telephony/webhooks/account-webhook.js';
import { AdminWebhookSchema, AdminWebhookSetSchema, WebhookRequestSchema } from '../schemas/admin-settings.js';
import { jsonContent } from '../schemas/responses.js';
import type { RouteDef } from '../types.js';
import { parseRequest } from '../validation.js';
import { adminRoute, audit, type AdminDeps } from './admin-route.js';
import { requireAccount } from './views.js';

/** Everything of a webhook but its secret. */
function webhookView(accountId: string, webhook: AccountWebhook | undefined) {
  return { account_id: accountId, url: webhook?.url ?? null, updated_at: webhook?.updatedAt ?? null };
}

export function webhookRoutes(deps: AdminDeps): RouteDef[] {
  const { store } = deps;
  return [
    adminRoute(deps, {
      method: 'GET',
      path: '/accounts/:id/webhook',
      openapi: {
        operationId: 'adminGetWebhook',
        summary: "Where the account's call events are POSTed (never the signing secret); url null when nowhere",
        responses: { 200: { description: 'The webhook', content: [jsonContent(AdminWebhookSchema)] } },
        errors: [404],
      },
      handler: async (req) => {
        const account = await requireAccount(store, req.params.id!);
        return { kind: 'json', body: webhookView(account.id, await store.getWebhook(account.id)) };
      },
    }),
    adminRoute(deps, {
      method: 'PUT',
      path: '/accounts/:id/webhook',
      openapi: {
        operationId: 'adminSetWebhook',
        summary: "POST the account's call events to this URL, signed with a new secret (shown in this response only) unless keep_secret",
        request: { contentType: 'application/json', schema: WebhookRequestSchema },
        responses: { 200: { description: 'The webhook, and its new signing secret (once)', content: [jsonContent(AdminWebhookSetSchema)] } },
        errors: [404],
      },
      handler: async (req, admin) => {
        const body = parseRequest(WebhookRequestSchema, await req.body.json());
        const account = await requireAccount(store, req.params.id!);
        // A URL Kuma could not POST to, or keep_secret without a secret: the domain's refusal, a 400 naming the field.
        const { webhook, newSecret, replaced } = await setAccountWebhook(store, account.id, body.url, { keepSecret: body.keep_secret });
        await audit(deps, admin, req, 'webhook.set', account.id, { url: webhook.url, new_secret: newSecret !== null, replaced });
        return { kind: 'json', body: { ...webhookView(account.id, webhook), ...(newSecret === null ? {} : { secret: newSecret }) } };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE',
      path: '/accounts/:id/webhook',
      openapi: {
        operationId: 'adminClearWebhook',
        summary: "Stop sending the account's call events (its URL and secret are forgotten)",
        responses: { 200: { description: 'The account without a webhook', content: [jsonContent(AdminWebhookSchema)] } },
        errors: [404],
      },
      handler: async (req, admin) => {
        const account = await requireAccount(store, req.params.id!);
        const had = await store.getWebhook(account.id);
        await store.setWebhook(account.id, null);
        await audit(deps, admin, req, 'webhook.clear', account.id, { had_webhook: had !== undefined });
        return { kind: 'json', body: webhookView(account.id, undefined) };
      },
    }),
  ];
}
