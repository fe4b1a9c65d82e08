/**
 * Telephony's domain errors. Only src/api/ maps them to HTTP (src/api/errors.ts toApiError); the call
 * routes map them to WebSocket close reasons. Other telephony parts add their own classes here.
 */

/** Why a per-call token was refused (src/telephony/call-token.ts). */
export type CallTokenFailure = 'malformed' | 'bad_signature' | 'expired' | 'key_revoked';

const TOKEN_TEXT: Record<CallTokenFailure, string> = {
  malformed: 'The call token is malformed.',
  bad_signature: 'The call token signature does not match.',
  expired: 'The call token has expired. Mint a new one with POST /telephony/v1/tokens.',
  key_revoked: 'The API key that minted this call token has been revoked.',
};

export class CallTokenError extends Error {
  constructor(readonly code: CallTokenFailure) {
    super(TOKEN_TEXT[code]);
    this.name = 'CallTokenError';
  }
}

/** Why an account's webhook setting was refused (src/telephony/webhooks/account-webhook.ts). */
export type WebhookSettingFailure = 'invalid_url' | 'no_secret_to_keep';

/** A webhook URL Kuma could not POST to, or a secret to keep where there is none; the message says which. */
export class WebhookSettingError extends Error {
  constructor(
    readonly reason: WebhookSettingFailure,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookSettingError';
  }
}
