/**
 * Everything the server's phone calls share: the frame pacer (one timer for every call's outbound audio),
 * the webhook sender, the live-call hub for control sockets, the call-token secret, the outbound allow-list,
 * the per-account call cap, and the models a call uses. It opens calls for the carrier connections
 * (call/call-connection.ts `CallOpener`).
 */
import { InsufficientQuotaError } from '../billing/errors.js';
import type { Ledger } from '../billing/ledger.js';
import type { ModelEngine } from '../engines/runtime/model-engine.js';
import { RateLimitedError } from '../limits/errors.js';
import type { Logger } from '../observability/logger.js';
import type { TelephonyMetrics } from '../observability/telephony-metrics.js';
import type { VadService } from '../realtime/vad/contract.js';
import type { Store } from '../store/store.js';
import { SessionCap } from '../limits/session-cap.js';
import type { KeySessions } from '../auth/key-sessions.js';
import type { CallStart, CarrierAdapter } from './carriers/contract.js';
import { CallRefused, type CallGrant, type CallOpener } from './call/call-connection.js';
import { CallEventHub } from './call/call-event-hub.js';
import { CallSession } from './call/call-session.js';
import type { CallApp, CallCarrier, CallIdentity, CallObserver } from './call/call-contract.js';
import type { CallSettings } from './call-settings.js';
import { FramePacer, type PacerObserver } from './call/frame-pacer.js';
import { connectRelay, type RelayBridgeOptions } from './call/relay-bridge.js';
import { transcriptionSink, type EventSink } from './call/transcription-sink.js';
import { checkCallTokenKey, verifyCallToken, type CallTokenClaims } from './call-token.js';
import { CallTokenError } from './errors.js';
import { checkOutbound, type OutboundPolicy } from '../outbound/outbound-policy.js';
import type { PinnedAddress } from './relay/relay-link.js';
import type { EncoderSource } from '../codecs/encoders/speech-encoders.js';
import { CLOSE_CODES, CLOSE_REASONS } from '../duplex/close-codes.js';

export interface TelephonyModels {
  asr: { id: string; engine: ModelEngine };
  tts: { id: string; engine: ModelEngine };
  mt: { id: string; engine: ModelEngine } | null;
  vad: VadService | null;
}

export interface TelephonyDeps {
  store: Store;
  ledger: Ledger;
  logger: Logger;
  models: TelephonyModels;
  webhooks: EventSink;
  tokenSecret: string;
  policy: OutboundPolicy;
  maxCallsPerAccount: number;
  startTimeoutMs: number;
  relayConnectTimeoutMs: number;
  maxBufferSeconds: number;
  pacerObserver?: PacerObserver;
  metrics?: TelephonyMetrics;
  /** `play` and `sendDigits` for relay apps (absent: refused with an error to the app). */
  media?: RelayBridgeOptions['media'];
  /** What calls' voices are encoded with (the server's pools). */
  encoders: EncoderSource;
  /** Open calls by the key they act for: revoking it ends them (`key_revoked`). */
  keySessions?: KeySessions;
}

export class TelephonyService implements CallOpener {
  readonly pacer: FramePacer;
  readonly hub = new CallEventHub();
  private readonly cap: SessionCap;
  private readonly releases = new Map<CallGrant, () => void>();
  readonly logger: Logger;
  readonly startTimeoutMs: number;

  constructor(private readonly deps: TelephonyDeps) {
    // 40 ms of audio ahead of real time when a playback starts: the carrier's cushion against a late tick.
    this.pacer = new FramePacer(40, deps.pacerObserver);
    this.cap = new SessionCap(deps.maxCallsPerAccount);
    this.logger = deps.logger;
    this.startTimeoutMs = deps.startTimeoutMs;
  }

  /** The allow-list check every outbound connection (relay, webhook, play) goes through. */
  readonly checkUrl = async (url: URL): Promise<void> => {
    await checkOutbound(url.toString(), this.deps.policy);
  };

  /** The check for the relay link, which connects to the vetted address (no second resolution to rebind). */
  private readonly vetRelayUrl = async (url: URL): Promise<PinnedAddress> => {
    const target = await checkOutbound(url.toString(), this.deps.policy);
    return { address: target.address, family: target.family };
  };

  /** A token → the grant; used before the upgrade (`?token=`) and on `start` (custom parameters). */
  async authorize(token: string | null, start: CallStart | null): Promise<CallGrant> {
    if (!token)
      throw new CallRefused(
        CLOSE_CODES.policyViolation,
        CLOSE_REASONS.invalidCallToken,
        'No call token: give ?token= on the stream URL or a "token" custom parameter (mint one with POST /telephony/v1/tokens).',
      );
    let claims: CallTokenClaims;
    try {
      claims = verifyCallToken(this.deps.tokenSecret, token);
      await checkCallTokenKey(this.deps.store, claims);
    } catch (err) {
      if (err instanceof CallTokenError)
        throw new CallRefused(CLOSE_CODES.policyViolation, CLOSE_REASONS.invalidCallToken, `The call token was refused: ${(err as Error).message}`);
      throw err;
    }
    const settings = settingsOf(claims);
    const override = start?.customParameters.relay_url;
    if (override && claims.allowRelayOverride) settings.relayUrl = override;
    if (settings.mode === 'relay' && !settings.relayUrl)
      throw new CallRefused(
        CLOSE_CODES.policyViolation,
        CLOSE_REASONS.invalidCallToken,
        'A relay call needs a relay URL: the token has none and the call gave no relay_url parameter.',
      );
    return { accountId: claims.accountId, keyId: claims.keyId, settings };
  }

  async createCall(
    grant: CallGrant,
    identity: Omit<CallIdentity, 'accountId' | 'keyId'>,
    start: CallStart,
    carrier: CallCarrier,
    adapter: CarrierAdapter,
  ): Promise<CallSession> {
    try {
      // A token checked before the upgrade may have lost its key while the carrier was yet to send `start`.
      await checkCallTokenKey(this.deps.store, grant);
      await this.deps.ledger.assertCanStart(grant.accountId);
    } catch (err) {
      if (err instanceof CallTokenError)
        throw new CallRefused(CLOSE_CODES.policyViolation, CLOSE_REASONS.invalidCallToken, `The call token was refused: ${err.message}`);
      if (err instanceof InsufficientQuotaError)
        throw new CallRefused(CLOSE_CODES.policyViolation, CLOSE_REASONS.insufficientQuota, 'The account has no balance left for calls.');
      throw err;
    }
    try {
      this.releases.set(grant, this.cap.acquire(grant.accountId));
    } catch (err) {
      if (err instanceof RateLimitedError)
        throw new CallRefused(
          CLOSE_CODES.policyViolation,
          CLOSE_REASONS.callLimit,
          `The account already has ${this.deps.maxCallsPerAccount} calls in progress.`,
        );
      throw err;
    }
    const { models } = this.deps;
    const alphabet = models.tts.engine.info.alphabet;
    const call = new CallSession(
      {
        store: this.deps.store,
        ledger: this.deps.ledger,
        logger: this.deps.logger,
        pacer: this.pacer,
        vad: models.vad,
        asr: models.asr,
        tts: {
          model: models.tts.id,
          engine: models.tts.engine,
          speakable: typeof alphabet === 'string' ? new Set(alphabet) : null,
          encoders: this.deps.encoders,
        },
        mt: models.mt,
        maxBufferSeconds: this.deps.maxBufferSeconds,
        ...(this.deps.metrics ? { observer: observerOf(this.deps.metrics, identity.carrier) } : {}),
      },
      { ...identity, accountId: grant.accountId, keyId: grant.keyId },
      start,
      grant.settings,
      carrier,
      adapter.outboundFormat(start),
      adapter.frameBytes(start),
    );
    // The call token's (or the AudioSocket key's) key: revoking it ends the call; the call's end unregisters it.
    const unregister = this.deps.keySessions?.register(grant.keyId, () => void call.close('key_revoked'));
    if (unregister) call.signal.addEventListener('abort', unregister, { once: true });
    return call;
  }

  async connectApp(call: CallSession, grant: CallGrant): Promise<CallApp> {
    if (grant.settings.mode === 'transcription') return transcriptionSink(call, this.deps.webhooks, this.hub);
    try {
      return await connectRelay(
        call,
        grant.settings.relayUrl!,
        {
          checkUrl: this.vetRelayUrl,
          connectTimeoutMs: this.deps.relayConnectTimeoutMs,
          logger: this.deps.logger,
          ...(this.deps.media ? { media: this.deps.media } : {}),
        },
        call.signal,
      );
    } catch (err) {
      void call.close('app_unreachable');
      throw new CallRefused(CLOSE_CODES.internalError, CLOSE_REASONS.appUnreachable, `The relay application could not be reached: ${(err as Error).message}`);
    }
  }

  released(grant: CallGrant): void {
    this.releases.get(grant)?.();
    this.releases.delete(grant);
  }

  close(): void {
    this.pacer.close();
  }
}

function observerOf(metrics: TelephonyMetrics, carrier: string): CallObserver {
  metrics.calls.inc({ carrier });
  return {
    bargeIn: () => metrics.bargeIns.inc(),
    replyLatency: (seconds) => metrics.replyLatency.observe(seconds),
    ended: (reason) => {
      metrics.calls.dec({ carrier });
      metrics.callsEnded.inc({ carrier, reason });
    },
  };
}

function settingsOf(claims: CallTokenClaims): CallSettings {
  return {
    mode: claims.mode,
    relayUrl: claims.relayUrl ?? null,
    transcriptionLanguage: claims.transcriptionLanguage,
    ttsLanguage: claims.ttsLanguage,
    welcomeGreeting: claims.welcomeGreeting ?? null,
    welcomeGreetingInterruptible: claims.interruptible !== 'none',
    interruptible: claims.interruptible,
  };
}
