/**
 * Who is calling, for the routes that need to know (create-api.ts runs this in front of them): the credential
 * presented (headers, a browser's subprotocol, the query where a route takes one), an API key or a client
 * secret where the route accepts one, the rate limits, and the balance; then, for a WebSocket, a place under
 * the key's session cap and the registration that lets a revocation end the session.
 *
 * The same checks run late for a socket whose credential comes in its first message
 * (first-message-auth.ts): `late` then means the HTTP request is over, so what a request would give back
 * when it ends (a limiter's place, a client secret) is given back at once instead.
 */
import { authenticateApiKey, extractApiKey, keyFromSubprotocols, type KeyLookup } from '../auth/api-keys.js';
import { giveBackClientSecret, isClientSecret, redeemClientSecret, SECRET_NOT_ACCEPTED_MESSAGE } from '../auth/client-secrets.js';
import { CredentialError } from '../auth/errors.js';
import type { KeySessions } from '../auth/key-sessions.js';
import type { Ledger } from '../billing/ledger.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import { limitSubjects, type LimitDefaults } from '../limits/limits.js';
import type { SessionCap } from '../limits/session-cap.js';
import type { Logger } from '../observability/logger.js';
import type { Store } from '../store/store.js';
import { ApiError, toApiError } from './errors.js';
import type { ApiRequest, DuplexResult, RouteDef } from './types.js';
import type { Caller } from '../auth/caller.js';
import { CLOSE_CODES, CLOSE_REASONS } from '../duplex/close-codes.js';

export interface AuthDeps {
  store: Store;
  keys?: KeyLookup;
  ledger: Ledger;
  logger: Logger;
  limiter?: RateLimiter | null;
  limitDefaults?: LimitDefaults;
  keySessions?: KeySessions;
}

/** The credential a request presents, or undefined (the route's query parameters included, where it names some). */
export function presentedCredential(def: RouteDef, req: ApiRequest): string | undefined {
  const headers = req.headers;
  // The native surface takes x-api-key only (SPEC §5.3).
  if (def.surface === 'native') return headers['x-api-key']?.trim() || undefined;
  // A browser's WebSocket carries the key as a subprotocol entry instead (PROTOCOLS §8); ElevenLabs clients
  // send theirs as `xi-api-key`, a header or (where the route takes it: a browser cannot set headers) a query parameter.
  const fromHeaders =
    extractApiKey({ authorization: headers.authorization, 'x-api-key': headers['x-api-key'] ?? headers['xi-api-key'] }) ??
    keyFromSubprotocols(headers['sec-websocket-protocol']);
  if (fromHeaders !== undefined) return fromHeaders;
  for (const name of def.keyQueryParameters ?? []) {
    const value = req.query
      .get(name)
      ?.trim()
      .replace(/^Bearer\s+/i, '');
    if (value) return value;
  }
  return undefined;
}

/**
 * Auth's refusal of a credential is answered here as the 401 it maps to, like every refusal of this
 * function: an answer to the client, not a failure to log.
 */
function refusedCredential(err: unknown): never {
  throw err instanceof CredentialError ? toApiError(err) : err;
}

/**
 * Authenticates `presented` for `def` and admits the caller under the rate limits and its balance; throws
 * the ApiError to answer. A client secret is taken out of the store here and put back (through `opening`)
 * if the session does not open after all.
 */
export async function authorize(deps: AuthDeps, def: RouteDef, req: ApiRequest, presented: string | undefined, opening: SessionOpening): Promise<Caller> {
  let caller: Caller;
  if (presented !== undefined && isClientSecret(presented)) {
    // Checked before the lookup: a secret presented where it is not accepted is refused without consuming it.
    if (!def.clientSecrets) throw new ApiError('invalid_api_key', SECRET_NOT_ACCEPTED_MESSAGE);
    const redeemed = await redeemClientSecret(deps.store, presented).catch(refusedCredential);
    caller = redeemed.caller;
    // Taken out of the store now, so that of two upgrades racing with one secret only this one has it; put
    // back if this upgrade is refused after all (any check below, the handler, the session cap, no 101).
    opening.unlessOpened(() =>
      giveBackClientSecret(deps.store, redeemed.record).catch((err: Error) =>
        deps.logger.warn({ requestId: req.requestId, err: err.message }, 'a client secret could not be put back after a refused upgrade'),
      ),
    );
  } else {
    caller = await authenticateApiKey(deps.keys ?? deps.store, presented).catch(refusedCredential);
  }
  // Limits before the balance: both refusals are free, and the in-memory check is the cheaper one. An
  // admitted request holds its places until its response has ended, however it ends.
  if (deps.limiter && deps.limitDefaults) {
    const admission = deps.limiter.admit(limitSubjects(deps.limitDefaults, caller));
    Object.assign(req.responseHeaders, admission.headers);
    // Late (the socket is already open): the request it counts as is over.
    if (opening.late) admission.release();
    else req.onFinished(() => admission.release());
  }
  // Work that costs money is refused before the body is read when nothing is available: the balance less
  // what requests in flight hold. The exact check, and the hold, come when the handler reserves its cost.
  if (def.billable) await deps.ledger.assertCanStart(caller.account.id);
  return caller;
}

/**
 * An upgrade request on its way to an open socket: what it took before the socket opened (a session place, a
 * client secret) is given back if it never opens — before the answer goes out when a check refuses it (so a
 * client retrying at once finds its secret), else when the request ends (a plain GET's 426, a client gone
 * before the 101). A late opening (the socket is open, its first message authenticates it) gives back only
 * when told to: the request has ended already.
 */
export class SessionOpening {
  opened = false;
  private pending: (() => unknown)[] = [];
  private watching = false;

  constructor(
    private readonly req: ApiRequest,
    readonly late = false,
  ) {}

  unlessOpened(giveBack: () => unknown): void {
    this.pending.push(giveBack);
    if (this.watching || this.late) return;
    this.watching = true;
    // uWS opens the socket synchronously within the upgrade, so by the time the request ends `opened` is known.
    this.req.onFinished(() => {
      if (!this.opened) void this.giveBack();
    });
  }

  /** Gives back everything taken so far, once (a give-back may be a store write: awaited). */
  async giveBack(): Promise<void> {
    const runs = this.pending;
    this.pending = [];
    await Promise.all(runs.map((run) => run()));
  }
}

/**
 * A WebSocket session holds a place under its key's session cap (429 before the upgrade when full) from now
 * until its socket closes; an upgrade that never completes gives the place back when its request ends. Once
 * open, the session is registered under its key, so that revoking the key ends it (close 1008 `key_revoked`,
 * after whatever the session's own `onKeyRevoked` tells its client).
 */
export function openSession(deps: AuthDeps, cap: SessionCap, caller: Caller, opening: SessionOpening, result: DuplexResult): DuplexResult {
  const release = cap.acquire(caller.key.id);
  opening.unlessOpened(release);
  return {
    ...result,
    open(peer) {
      opening.opened = true;
      let unregister: (() => void) | undefined;
      // Attached before the route's open, which may throw (the transport then closes the socket 1011).
      if (peer.signal.aborted) release();
      else peer.signal.addEventListener('abort', () => (release(), unregister?.()), { once: true });
      const handler = result.open(peer);
      if (!peer.signal.aborted) {
        unregister = deps.keySessions?.register(caller.key.id, () => {
          if (handler.onKeyRevoked) handler.onKeyRevoked();
          else peer.close(CLOSE_CODES.policyViolation, CLOSE_REASONS.keyRevoked);
        });
      }
      return handler;
    },
  };
}
