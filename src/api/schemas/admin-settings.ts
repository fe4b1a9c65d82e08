/**
 * Requests and responses of the admin API's per-account settings (README "Admin API"): rate-limit overrides
 * of an account or a key (`npm run keys -- limits`) and an account's webhook (`npm run keys -- webhook`).
 * Limits are whole numbers, 0 = unlimited; in a change, null puts a field back to the configured default.
 */
import { z } from 'zod';
import { timestamp } from './admin.js';

/** The three budgets, by their API names. */
export const LIMIT_FIELDS = ['requests_per_minute', 'tokens_per_minute', 'concurrent'] as const;

const FIELD_TEXT = {
  requests_per_minute: 'Requests a minute',
  tokens_per_minute: 'Billed amount a minute (seconds of audio, characters or tokens)',
  concurrent: 'Requests in flight at once',
} as const;

const change = (field: (typeof LIMIT_FIELDS)[number]) =>
  z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .nullable()
    .optional()
    .describe(`${FIELD_TEXT[field]}: 0 = unlimited, null = back to the configured default, absent = unchanged.`);

// Strict, as every admin body: a misspelt budget (`request_per_minute`) is refused, not silently ignored.
export const LimitsPatchRequestSchema = z
  .strictObject({
    requests_per_minute: change('requests_per_minute'),
    tokens_per_minute: change('tokens_per_minute'),
    concurrent: change('concurrent'),
  })
  .refine((body) => Object.keys(body).length > 0, { message: `give at least one of ${LIMIT_FIELDS.join(', ')}` })
  .meta({ id: 'AdminLimitsPatch' });

const overridden = (field: (typeof LIMIT_FIELDS)[number]) =>
  z.number().int().nullable().describe(`${FIELD_TEXT[field]} as stored for this subject; null = not overridden (the default applies).`);
const inForce = (field: (typeof LIMIT_FIELDS)[number]) =>
  z.number().int().describe(`${FIELD_TEXT[field]}: the override, else the configured default; 0 = unlimited.`);

export const AdminLimitsSchema = z
  .object({
    subject: z.string().describe('The account or key id.'),
    kind: z.enum(['account', 'key']).describe("An account's limits bound all its keys together; a key's bound that key alone."),
    enforced: z.boolean().describe('false when this server enforces no rate limits (KUMA_RATE_LIMITS=off): `effective` is then what would apply.'),
    overrides: z
      .object({
        requests_per_minute: overridden('requests_per_minute'),
        tokens_per_minute: overridden('tokens_per_minute'),
        concurrent: overridden('concurrent'),
      })
      .meta({ id: 'AdminLimitOverrides' }),
    effective: z
      .object({ requests_per_minute: inForce('requests_per_minute'), tokens_per_minute: inForce('tokens_per_minute'), concurrent: inForce('concurrent') })
      .meta({ id: 'AdminEffectiveLimits' }),
  })
  .meta({ id: 'AdminLimits' });

export const WebhookRequestSchema = z
  .strictObject({
    url: z.string().describe('An absolute https:// (or http://) URL without user name, password or #fragment, at most 2048 characters.'),
    keep_secret: z.boolean().optional().describe('Keep the current signing secret (refused when the account has no webhook yet); default false: a new one.'),
  })
  .meta({ id: 'AdminWebhookRequest' });

export const AdminWebhookSchema = z
  .object({
    account_id: z.string(),
    url: z.string().nullable().describe("Where the account's call events are POSTed; null when none are sent."),
    updated_at: timestamp.nullable().describe('When the URL or secret was last set; null without a webhook.'),
  })
  .meta({ id: 'AdminWebhook' });

export const AdminWebhookSetSchema = z
  .object({
    account_id: z.string(),
    url: z.string(),
    updated_at: timestamp,
    secret: z.string().optional().describe('The new signing secret (whsec_…), shown in this response only; absent when keep_secret kept the old one.'),
  })
  .meta({ id: 'AdminWebhookSet' });
