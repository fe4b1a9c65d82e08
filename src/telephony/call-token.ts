/**
 * Per-call tokens. A carrier cannot send custom headers, so the stream URL (`?token=`) or the call's custom
 * parameters carry a token minted by POST /telephony/v1/tokens: the account and key it acts for and the
 * call settings, signed with HMAC-SHA256 and expiring. Verifying needs only the secret, no storage, so any
 * process on the same database (or with the same KUMA_TELEPHONY_SECRET) accepts it; whether the key was
 * revoked since is a separate store check at call time (`checkCallTokenKey`).
 *
 * Token: `kct1.` + base64url(JSON payload) + `.` + base64url(MAC over `kct1.` + payload part).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Store } from '../store/store.js';
import { CallTokenError } from './errors.js';
import { CALL_LANGUAGES, CALL_MODES, INTERRUPTIBLE_VALUES, type CallLanguage, type CallMode, type Interruptible } from './call-settings.js';

export const CALL_TOKEN_PREFIX = 'kct1.';
/** The name of the stored secret when KUMA_TELEPHONY_SECRET is not set. */
export const TOKEN_SECRET_NAME = 'telephony-token';
export const MIN_SECRET_BYTES = 32;
/** Longer than any token this server mints (a 1000-character greeting included): refused unread. */
const MAX_TOKEN_CHARS = 8192;
const MAC_BYTES = 32;

/** What a token grants: who the call acts for, and the call's settings. */
export interface CallTokenClaims {
  accountId: string;
  keyId: string;
  mode: CallMode;
  /** Where a relay call connects (already checked against the outbound allow-list when minted). */
  relayUrl?: string;
  transcriptionLanguage: CallLanguage;
  ttsLanguage: CallLanguage;
  welcomeGreeting?: string;
  interruptible: Interruptible;
  /** Whether the call may give `customParameters.relay_url` in place of (or without) `relayUrl`. */
  allowRelayOverride: boolean;
  /** Seconds since the epoch. */
  issuedAt: number;
  /** Seconds since the epoch; the token is refused from this second on. */
  expiresAt: number;
}

export type CallTokenGrant = Omit<CallTokenClaims, 'issuedAt' | 'expiresAt'>;

// Short field names: the token travels in a URL that carriers may limit in length.
const PayloadSchema = z.object({
  a: z.string().min(1),
  k: z.string().min(1),
  m: z.enum(CALL_MODES),
  u: z.string().optional(),
  tl: z.enum(CALL_LANGUAGES),
  sl: z.enum(CALL_LANGUAGES),
  g: z.string().optional(),
  i: z.enum(INTERRUPTIBLE_VALUES),
  o: z.union([z.literal(0), z.literal(1)]),
  iat: z.number().int(),
  exp: z.number().int(),
});
type Payload = z.infer<typeof PayloadSchema>;

const macOf = (secret: string, signed: string) => createHmac('sha256', secret).update(signed, 'utf8').digest();

export function mintCallToken(secret: string, grant: CallTokenGrant & { ttlSeconds: number }, now = Date.now()): { token: string; claims: CallTokenClaims } {
  const issuedAt = Math.floor(now / 1000);
  const claims: CallTokenClaims = {
    accountId: grant.accountId,
    keyId: grant.keyId,
    mode: grant.mode,
    ...(grant.relayUrl !== undefined ? { relayUrl: grant.relayUrl } : {}),
    transcriptionLanguage: grant.transcriptionLanguage,
    ttsLanguage: grant.ttsLanguage,
    ...(grant.welcomeGreeting !== undefined ? { welcomeGreeting: grant.welcomeGreeting } : {}),
    interruptible: grant.interruptible,
    allowRelayOverride: grant.allowRelayOverride,
    issuedAt,
    expiresAt: issuedAt + Math.floor(grant.ttlSeconds),
  };
  const payload: Payload = {
    a: claims.accountId,
    k: claims.keyId,
    m: claims.mode,
    u: claims.relayUrl,
    tl: claims.transcriptionLanguage,
    sl: claims.ttsLanguage,
    g: claims.welcomeGreeting,
    i: claims.interruptible,
    o: claims.allowRelayOverride ? 1 : 0,
    iat: claims.issuedAt,
    exp: claims.expiresAt,
  };
  const signed = CALL_TOKEN_PREFIX + Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
  return { token: `${signed}.${macOf(secret, signed).toString('base64url')}`, claims };
}

/** The token's claims, or CallTokenError `malformed`, `bad_signature` or `expired`. Needs no storage. */
export function verifyCallToken(secret: string, token: string, now = Date.now()): CallTokenClaims {
  if (typeof token !== 'string' || token.length > MAX_TOKEN_CHARS || !token.startsWith(CALL_TOKEN_PREFIX)) throw new CallTokenError('malformed');
  const dot = token.lastIndexOf('.');
  const signed = token.slice(0, dot);
  const macPart = token.slice(dot + 1);
  if (dot < CALL_TOKEN_PREFIX.length || !/^[A-Za-z0-9_-]+$/.test(macPart) || !/^[A-Za-z0-9_-]+$/.test(signed.slice(CALL_TOKEN_PREFIX.length))) {
    throw new CallTokenError('malformed');
  }
  const presented = Buffer.from(macPart, 'base64url');
  // The MAC is checked before the payload is read: nothing an outsider wrote is parsed. Only the canonical
  // spelling of the MAC counts (base64url's last character has spare bits), so no two tokens share a MAC.
  if (presented.length !== MAC_BYTES || presented.toString('base64url') !== macPart || !timingSafeEqual(presented, macOf(secret, signed)))
    throw new CallTokenError('bad_signature');
  let payload: Payload;
  try {
    payload = PayloadSchema.parse(JSON.parse(Buffer.from(signed.slice(CALL_TOKEN_PREFIX.length), 'base64url').toString('utf8')));
  } catch {
    // Signed by this secret yet unreadable: a token of another format version.
    throw new CallTokenError('malformed');
  }
  if (Math.floor(now / 1000) >= payload.exp) throw new CallTokenError('expired');
  return {
    accountId: payload.a,
    keyId: payload.k,
    mode: payload.m,
    ...(payload.u !== undefined ? { relayUrl: payload.u } : {}),
    transcriptionLanguage: payload.tl,
    ttsLanguage: payload.sl,
    ...(payload.g !== undefined ? { welcomeGreeting: payload.g } : {}),
    interruptible: payload.i,
    allowRelayOverride: payload.o === 1,
    issuedAt: payload.iat,
    expiresAt: payload.exp,
  };
}

/**
 * At call time: the key that minted the token still exists, belongs to the token's account and is not
 * revoked (revoking a key stops its tokens at the next call). Throws CallTokenError `key_revoked`.
 */
export async function checkCallTokenKey(store: Pick<Store, 'getKey'>, claims: Pick<CallTokenClaims, 'accountId' | 'keyId'>): Promise<void> {
  const key = await store.getKey(claims.keyId);
  if (!key || key.revokedAt !== null || key.accountId !== claims.accountId) throw new CallTokenError('key_revoked');
}

/**
 * The signing secret: KUMA_TELEPHONY_SECRET when the operator set one (the config refuses one under 32
 * bytes), else a random one made once and kept in the store, so tokens survive restarts and every process
 * on the database accepts the others' tokens.
 */
export async function telephonyTokenSecret(configured: string, store: Pick<Store, 'serverSecret'>): Promise<string> {
  if (configured) {
    if (Buffer.byteLength(configured, 'utf8') < MIN_SECRET_BYTES) throw new Error(`KUMA_TELEPHONY_SECRET must be at least ${MIN_SECRET_BYTES} bytes`);
    return configured;
  }
  return store.serverSecret(TOKEN_SECRET_NAME, () => randomBytes(32).toString('base64url'));
}
