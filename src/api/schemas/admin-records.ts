/**
 * The admin API's recent records of an account (README "Admin API"): its phone calls and its usage rows,
 * newest first — what `npm run keys -- usage ACCOUNT_ID` prints.
 */
import { z } from 'zod';
import { micros, timestamp, units } from './admin.js';

export const MAX_RECORDS = 500;
export const DEFAULT_RECORDS = 50;

/** Query parameters arrive as strings: `?limit=20`. */
export const RecordsQuerySchema = z.object({ limit: z.coerce.number().int().min(1).max(MAX_RECORDS).default(DEFAULT_RECORDS) });

export const AdminCallListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(
      z
        .object({
          id: z.string().describe('call_…'),
          carrier: z.string().describe('twilio, telnyx, plivo, exotel, vonage or audiosocket.'),
          mode: z.string().describe('transcription or relay.'),
          carrier_call_id: z.string().nullable().describe("The carrier's own call id (a Twilio CallSid), when it gave one."),
          started_at: timestamp,
          ended_at: timestamp,
          duration_ms: z.number().int(),
          turns: z.number().int().describe('Caller turns.'),
          caller_seconds: z.number().describe('Seconds of caller audio processed.'),
          characters_synthesized: z.number().int(),
          characters_translated: z.number().int(),
          cost_micros: micros,
          cost: units,
          end_reason: z.string().describe('caller_hangup, app_ended, app_disconnected, insufficient_quota, error, shutdown, …'),
          key_id: z.string().describe('The key the call was authorized with.'),
        })
        .meta({ id: 'AdminCall' }),
    ),
  })
  .meta({ id: 'AdminCallList' });

export const AdminUsageRecordListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(
      z
        .object({
          id: z.number().int().describe('Ascending with time.'),
          created_at: timestamp,
          request_id: z.string().describe('The request billed (its x-request-id); one request may have several rows.'),
          key_id: z.string(),
          model: z.string(),
          unit: z.enum(['second', 'character', 'token']),
          quantity: z.number(),
          unit_price_micros: micros,
          cost_micros: micros,
          cost: units,
        })
        .meta({ id: 'AdminUsageRecord' }),
    ),
  })
  .meta({ id: 'AdminUsageRecordList' });
