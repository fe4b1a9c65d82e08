/**
 * The webhook signature: `Kuma-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
 * The timestamp is signed with the body so that a captured request cannot be replayed later than the
 * receiver's tolerance; `verifyWebhookSignature` is what an integrator (and our tests) runs on the raw bytes
 * received. The HMAC key is the secret exactly as `npm run keys -- webhook set` printed it (`whsec_…`).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'Kuma-Signature';
export const EVENT_ID_HEADER = 'Kuma-Event-Id';

/** A new signing secret: `whsec_` and 32 random bytes in base64url. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

function hmacHex(secret: string, timestamp: number, body: string | Uint8Array): string {
  const mac = createHmac('sha256', secret);
  mac.update(`${timestamp}.`);
  mac.update(body);
  return mac.digest('hex');
}

/** The header value for one attempt: `t` is the attempt's time, so a retry hours later still verifies. */
export function signWebhook(secret: string, body: string | Uint8Array, nowSeconds: number = Math.floor(Date.now() / 1000)): string {
  const t = Math.floor(nowSeconds);
  return `t=${t},v1=${hmacHex(secret, t, body)}`;
}

export type SignatureCheck = { valid: true; timestamp: number } | { valid: false; reason: 'malformed' | 'mismatch' | 'expired' };

/**
 * Checks a `Kuma-Signature` header against the raw body. Several `v1=` entries are accepted (any one
 * matching is enough) so that a future secret rotation can sign with both secrets for a while.
 * `now` and the tolerance are in seconds; the timestamp may be that far in the past or the future.
 */
export function verifyWebhookSignature(
  secret: string,
  header: string | undefined | null,
  body: string | Uint8Array,
  now: number = Math.floor(Date.now() / 1000),
  toleranceSeconds = 300,
): SignatureCheck {
  if (!header) return { valid: false, reason: 'malformed' };
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  if (timestamp === undefined || signatures.length === 0) return { valid: false, reason: 'malformed' };
  const expected = Buffer.from(hmacHex(secret, timestamp, body), 'hex');
  // Constant-time comparison: the check must not tell an attacker how many leading bytes were right.
  const matches = signatures.some((s) => timingSafeEqual(Buffer.from(s, 'hex'), expected));
  if (!matches) return { valid: false, reason: 'mismatch' };
  if (Math.abs(now - timestamp) > toleranceSeconds) return { valid: false, reason: 'expired' };
  return { valid: true, timestamp };
}
