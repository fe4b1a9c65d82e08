/**
 * Requests and responses of the admin API (/admin/v1, README "Admin API"): accounts, their keys, credit,
 * daily usage, model readiness and the audit trail. Money goes out twice, as integer micros (exact, for
 * arithmetic) and as a units string (for display); it comes in as units, a string or a number.
 */
import { z } from 'zod';
import { InvalidAmountError } from '../../billing/errors.js';
import { parseUnits } from '../../billing/units.js';

export const MAX_NAME_LENGTH = 100;
export const MAX_LABEL_LENGTH = 100;
export const MAX_USAGE_DAYS = 366;
export const DEFAULT_USAGE_DAYS = 30;
export const MAX_AUDIT_ENTRIES = 1000;
export const DEFAULT_AUDIT_ENTRIES = 100;

/** What the audit trail records: every admin call that changes something. */
export const AUDIT_ACTIONS = [
  'account.create',
  'account.credit',
  'key.create',
  'key.revoke',
  'limits.set',
  'limits.clear',
  'webhook.set',
  'webhook.clear',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** An amount in units ("12.50" or 12.5, at most 6 decimals) → integer micros; a bad one is a 400 naming the field. */
function unitsAmount(options: { allowNegative: boolean; allowZero: boolean }) {
  return z.union([z.string(), z.number()]).transform((value, ctx) => {
    try {
      const micros = parseUnits(String(value), options);
      if (micros === 0 && !options.allowZero) ctx.addIssue({ code: 'custom', message: 'must not be zero' });
      return micros;
    } catch (err) {
      if (!(err instanceof InvalidAmountError)) throw err;
      ctx.addIssue({ code: 'custom', message: err.message });
      return z.NEVER;
    }
  });
}

// Strict bodies: a misspelt field (`balanse`) on an operator's console is refused, not silently ignored.
export const CreateAccountRequestSchema = z
  .strictObject({
    name: z.string().trim().min(1).max(MAX_NAME_LENGTH),
    balance: unitsAmount({ allowNegative: false, allowZero: true }).optional().describe('Starting balance in units, e.g. "12.50" (default 0).'),
  })
  .meta({ id: 'AdminCreateAccountRequest' });

export const CreditRequestSchema = z
  .strictObject({
    amount: unitsAmount({ allowNegative: true, allowZero: false }).describe('Units to add, e.g. "25" or 2.5; negative to remove.'),
  })
  .meta({ id: 'AdminCreditRequest' });

export const CreateKeyRequestSchema = z
  .strictObject({ label: z.string().min(1).max(MAX_LABEL_LENGTH).optional().describe('Default "default".') })
  .meta({ id: 'AdminCreateKeyRequest' });

/** Query parameters arrive as strings: `?days=7`. */
export const UsageQuerySchema = z.object({ days: z.coerce.number().int().min(1).max(MAX_USAGE_DAYS).default(DEFAULT_USAGE_DAYS) });
export const AuditQuerySchema = z.object({ limit: z.coerce.number().int().min(1).max(MAX_AUDIT_ENTRIES).default(DEFAULT_AUDIT_ENTRIES) });

export const micros = z.number().int().describe('Integer micro-units (1 unit = 1,000,000 micros).');
export const units = z.string().describe('The same amount in units, for display: "12.50".');
export const timestamp = z.string().describe('ISO 8601, UTC.');

export const AdminIdentitySchema = z.object({ id: z.string().describe('adm_…'), label: z.string(), created_at: timestamp }).meta({ id: 'AdminIdentity' });

export const AdminAccountSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    balance_micros: micros,
    balance: units,
    available_micros: micros.describe('The balance less what requests in flight hold.'),
    available: units,
    created_at: timestamp,
    active_keys: z.number().int().describe('Keys not revoked.'),
  })
  .meta({ id: 'AdminAccount' });

export const AdminAccountListSchema = z.object({ object: z.literal('list'), data: z.array(AdminAccountSchema) }).meta({ id: 'AdminAccountList' });

export const AdminApiKeySchema = z
  .object({ id: z.string(), account_id: z.string(), label: z.string(), created_at: timestamp, revoked_at: timestamp.nullable() })
  .meta({ id: 'AdminApiKey' });

export const AdminAccountDetailSchema = AdminAccountSchema.extend({ keys: z.array(AdminApiKeySchema) }).meta({ id: 'AdminAccountDetail' });

export const CreatedApiKeySchema = z
  .object({ key: AdminApiKeySchema, api_key: z.string().describe('The key itself (a UUID): shown only in this response, never again.') })
  .meta({ id: 'AdminCreatedApiKey' });

export const RevokedApiKeySchema = z.object({ key: AdminApiKeySchema }).meta({ id: 'AdminRevokedApiKey' });

export const UsageReportSchema = z
  .object({
    account_id: z.string(),
    days: z.array(
      z
        .object({
          date: z.string().describe('YYYY-MM-DD, UTC.'),
          requests: z.number().int().describe('Distinct requests with usage that day.'),
          cost_micros: micros,
          cost: units,
          seconds: z.number().describe('Seconds of audio billed.'),
          characters: z.number().describe('Characters billed.'),
          tokens: z.number().describe('Tokens billed.'),
        })
        .meta({ id: 'AdminUsageDay' }),
    ),
    total_cost_micros: micros,
    total_cost: units,
  })
  .meta({ id: 'AdminUsageReport' });

export const AdminModelListSchema = z
  .object({
    object: z.literal('list'),
    ready: z.boolean().describe('Every model listed is ready.'),
    data: z.array(
      z
        .object({
          id: z.string(),
          capability: z.enum(['transcription', 'speech', 'translation']),
          legacy: z.boolean().describe('A legacy id, served until the retirement date.'),
          engine: z.string().nullable().describe('The runner of its manifest entry; null when no engine serves it here.'),
          ready: z.boolean(),
          detail: z.string().optional().describe('Why it is not ready.'),
        })
        .meta({ id: 'AdminModel' }),
    ),
  })
  .meta({ id: 'AdminModelList' });

export const AuditListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(
      z
        .object({
          id: z.string(),
          at: timestamp,
          admin_key_id: z.string(),
          action: z.enum(AUDIT_ACTIONS),
          target: z.string().describe('The account or key acted on.'),
          detail: z.record(z.string(), z.unknown()),
          request_id: z.string(),
        })
        .meta({ id: 'AdminAuditEntry' }),
    ),
  })
  .meta({ id: 'AdminAuditList' });
