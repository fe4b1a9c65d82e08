/** The webhook delivery of call events: what the call core and the server wiring import. */
export { WebhookSender, type WebhookSenderDeps, type WebhookSenderOptions } from './webhook-sender.js';
export type { CheckUrl } from './endpoint-resolver.js';
export type { CallEvent, CallEventType, WebhookEnvelope } from './events.js';
export { newWebhookSecret, signWebhook, verifyWebhookSignature, SIGNATURE_HEADER, EVENT_ID_HEADER, type SignatureCheck } from './signature.js';
