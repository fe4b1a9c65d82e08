/** The webhook delivery of call events: what the call core and the server wiring import. */
import type { WebhookSenderOptions } from './webhook-sender.js';

export { WebhookSender, type WebhookSenderDeps, type WebhookSenderOptions } from './webhook-sender.js';
export type { CheckUrl } from './endpoint-resolver.js';
export type { CallEvent, CallEventType, WebhookEnvelope } from './events.js';
export { newWebhookSecret, signWebhook, verifyWebhookSignature, SIGNATURE_HEADER, EVENT_ID_HEADER, type SignatureCheck } from './signature.js';

/** The sender's options from the server configuration (KUMA_WEBHOOK_TIMEOUT_MS, KUMA_WEBHOOK_MAX_ATTEMPTS). */
export function webhookOptionsOf(config: { webhookTimeoutMs: number; webhookMaxAttempts: number }): WebhookSenderOptions {
  return { attemptTimeoutMs: config.webhookTimeoutMs, retry: { maxAttempts: config.webhookMaxAttempts } };
}
