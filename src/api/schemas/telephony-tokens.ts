/**
 * Request and response of `POST /telephony/v1/tokens`: the settings a phone call's token carries (README
 * "Telephony"). Languages are Kuma's codes or ConversationRelay-style tags, normalised to bam, fra or eng.
 */
import { z } from 'zod';
import { CALL_LANGUAGES, CALL_MODES, INTERRUPTIBLE_VALUES, LANGUAGE_HINT, normaliseCallLanguage } from '../../telephony/call-settings.js';

export const MIN_CALL_TOKEN_TTL_S = 60;
export const MAX_CALL_TOKEN_TTL_S = 86_400;
export const DEFAULT_CALL_TOKEN_TTL_S = 3600;
/** A greeting is spoken at once and travels inside the token (in a URL): a sentence or two. */
export const MAX_WELCOME_GREETING_CHARS = 1000;

const languageTag = z
  .string()
  .max(35)
  .refine((tag) => normaliseCallLanguage(tag) !== undefined, `unsupported language; ${LANGUAGE_HINT}`)
  .describe('bam, fra or eng, or a tag such as bm-ML, fr-FR, en-US.');

export const CallTokenRequestSchema = z
  .strictObject({
    relay_url: z
      .string()
      .max(2048)
      .optional()
      .describe('The ws:// or wss:// URL of the application Kuma connects a relay call to (ConversationRelay messages). Must be on the outbound allow-list.'),
    mode: z
      .enum(CALL_MODES)
      .optional()
      .describe('`relay` (the default when relay_url is given) or `transcription` (caller turns as webhooks and control-socket events).'),
    language: languageTag.optional().describe('Sets both transcription_language and tts_language.'),
    transcription_language: languageTag
      .optional()
      .describe('The language the application receives prompts in: bam (the default) or fra/eng, translated from the Bambara caller.'),
    tts_language: languageTag
      .optional()
      .describe('The language the application writes its replies in: bam (the default) or fra/eng, translated to Bambara before synthesis.'),
    ttl_seconds: z.number().int().min(MIN_CALL_TOKEN_TTL_S).max(MAX_CALL_TOKEN_TTL_S).optional().describe('How long the token opens calls; default 3600.'),
    welcome_greeting: z.string().min(1).max(MAX_WELCOME_GREETING_CHARS).optional().describe('Spoken to the caller when the call starts.'),
    interruptible: z.enum(INTERRUPTIBLE_VALUES).optional().describe('Which caller input interrupts playback; default any.'),
    allow_relay_override: z
      .boolean()
      .optional()
      .describe('Relay calls: let the call give customParameters.relay_url (checked against the allow-list when the call starts).'),
  })
  .meta({ id: 'TelephonyCallTokenRequest' });

export const CallTokenResponseSchema = z
  .object({
    object: z.literal('telephony.call_token'),
    token: z.string().describe('Give it as ?token= on the carrier stream URL or as the customParameters.token of the stream.'),
    expires_at: z.number().int().describe('Seconds since the epoch.'),
    mode: z.enum(CALL_MODES),
    relay_url: z.string().nullable(),
    transcription_language: z.enum(CALL_LANGUAGES),
    tts_language: z.enum(CALL_LANGUAGES),
    welcome_greeting: z.string().nullable(),
    interruptible: z.enum(INTERRUPTIBLE_VALUES),
    allow_relay_override: z.boolean(),
  })
  .meta({ id: 'TelephonyCallToken' });

export type CallTokenRequest = z.infer<typeof CallTokenRequestSchema>;
