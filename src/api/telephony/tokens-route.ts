/**
 * `POST /telephony/v1/tokens`: an application's backend mints the token a phone call presents to Kuma's
 * carrier stream (carriers cannot send an API key). The token binds the call to the minting account and key
 * and to the call's settings; a relay URL is checked against the outbound allow-list here, so a refused host
 * fails now with its reason rather than later on a ringing phone. Minting is free.
 */
import { mintCallToken } from '../../telephony/call-token.js';
import { DEFAULT_CALL_LANGUAGE, DEFAULT_INTERRUPTIBLE, normaliseCallLanguage, type CallLanguage } from '../../telephony/call-settings.js';
import { OutboundRefusedError } from '../../outbound/errors.js';
import { checkOutbound, type LookupAll, type OutboundPolicy } from '../../outbound/outbound-policy.js';
import { ApiError } from '../errors.js';
import { CallTokenRequestSchema, CallTokenResponseSchema, DEFAULT_CALL_TOKEN_TTL_S, type CallTokenRequest } from '../schemas/telephony-tokens.js';
import { jsonContent } from '../schemas/responses.js';
import type { RouteDef } from '../types.js';
import { parseRequest } from '../validation.js';

export interface CallTokenRouteDeps {
  /** The HMAC key of call tokens (src/telephony/call-token.ts telephonyTokenSecret). */
  tokenSecret: string;
  outbound: OutboundPolicy;
  /** Name resolution for the allow-list check (tests inject one); the system resolver when absent. */
  lookup?: LookupAll;
  now?: () => number;
}

export function callTokenRoute(deps: CallTokenRouteDeps): RouteDef {
  return {
    method: 'POST',
    path: '/tokens',
    surface: 'telephony',
    auth: true,
    openapi: {
      operationId: 'createTelephonyCallToken',
      summary: 'Mint a signed, expiring token for phone calls to present to a carrier stream',
      description:
        'The token opens carrier media streams (`/telephony/v1/twilio`, …) for this account until `expires_at`, with the settings given here. ' +
        'It stops working when the key that minted it is revoked. A relay_url must be ws(s):// and on the outbound allow-list (KUMA_OUTBOUND_ALLOW).',
      tags: ['Telephony'],
      request: { contentType: 'application/json', schema: CallTokenRequestSchema },
      responses: { 200: { description: 'The token and the call settings it carries', content: [jsonContent(CallTokenResponseSchema)] } },
    },
    handler: async (req, caller) => {
      const body = parseRequest(CallTokenRequestSchema, await req.body.json());
      const mode = body.mode ?? (body.relay_url !== undefined ? 'relay' : 'transcription');
      if (mode === 'transcription' && body.relay_url !== undefined) {
        throw new ApiError('invalid_value', 'relay_url: a transcription call does not connect to an application; omit relay_url or use mode relay', {
          param: 'relay_url',
        });
      }
      if (mode === 'transcription' && body.allow_relay_override) {
        throw new ApiError('invalid_value', 'allow_relay_override: applies to relay calls only; use mode relay', { param: 'allow_relay_override' });
      }
      if (mode === 'relay' && body.relay_url === undefined && !body.allow_relay_override) {
        throw new ApiError(
          'missing_required_parameter',
          'relay_url: Field required: a relay call needs relay_url, or allow_relay_override: true for the call to give customParameters.relay_url',
          {
            param: 'relay_url',
          },
        );
      }
      const relayUrl = body.relay_url === undefined ? undefined : await vetRelayUrl(deps, body.relay_url);
      const { token, claims } = mintCallToken(
        deps.tokenSecret,
        {
          accountId: caller!.account.id,
          keyId: caller!.key.id,
          mode,
          relayUrl,
          ...languagesOf(body),
          welcomeGreeting: body.welcome_greeting,
          interruptible: body.interruptible ?? DEFAULT_INTERRUPTIBLE,
          allowRelayOverride: body.allow_relay_override ?? false,
          ttlSeconds: body.ttl_seconds ?? DEFAULT_CALL_TOKEN_TTL_S,
        },
        deps.now?.() ?? Date.now(),
      );
      return {
        kind: 'json',
        body: {
          object: 'telephony.call_token',
          token,
          expires_at: claims.expiresAt,
          mode: claims.mode,
          relay_url: claims.relayUrl ?? null,
          transcription_language: claims.transcriptionLanguage,
          tts_language: claims.ttsLanguage,
          welcome_greeting: claims.welcomeGreeting ?? null,
          interruptible: claims.interruptible,
          allow_relay_override: claims.allowRelayOverride,
        },
      };
    },
  };
}

/** `language` sets both; a specific one overrides it (as in ConversationRelay). Tags were validated by the schema. */
function languagesOf(body: CallTokenRequest): { transcriptionLanguage: CallLanguage; ttsLanguage: CallLanguage } {
  const both = body.language === undefined ? DEFAULT_CALL_LANGUAGE : normaliseCallLanguage(body.language)!;
  return {
    transcriptionLanguage: body.transcription_language === undefined ? both : normaliseCallLanguage(body.transcription_language)!,
    ttsLanguage: body.tts_language === undefined ? both : normaliseCallLanguage(body.tts_language)!,
  };
}

/** The relay speaks WebSocket; its host must pass the allow-list. Answers the URL as parsed (normalised). */
async function vetRelayUrl(deps: CallTokenRouteDeps, relayUrl: string): Promise<string> {
  if (!/^wss?:\/\//i.test(relayUrl.trim())) throw new ApiError('invalid_value', 'relay_url: must be a ws:// or wss:// URL', { param: 'relay_url' });
  try {
    return (await checkOutbound(relayUrl.trim(), deps.outbound, deps.lookup)).url.href;
  } catch (err) {
    if (err instanceof OutboundRefusedError) throw new ApiError('invalid_value', `relay_url: ${err.reason}`, { param: 'relay_url' });
    throw err;
  }
}
