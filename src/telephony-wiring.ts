/**
 * Wires the server's telephony from its configuration (top floor, beside server.ts: it joins the telephony
 * domain to the API routes and to the AudioSocket listener): the call-token secret (configured, or made once
 * and kept in the store), the outbound allow-list, the webhook sender, the TelephonyService with the models a
 * call uses, its routes, and the AudioSocket listener when a port is configured. Without the models a call
 * needs (speech-to-text, voice, VAD) only the token route is served (the carrier paths answer 404).
 */
import type { Config } from './config/config.js';
import type { Ledger } from './billing/ledger.js';
import type { DecoderPool } from './codecs/decode/decoder-pool.js';
import type { EngineRegistry } from './engines/engine-registry.js';
import type { Logger } from './observability/logger.js';
import type { Metrics } from './observability/metrics.js';
import { telephonyMetrics } from './observability/telephony-metrics.js';
import type { VadService } from './realtime/vad/contract.js';
import type { Store } from './store/store.js';
import type { KeySessions } from './auth/key-sessions.js';
import type { RouteDef } from './api/types.js';
import { carrierRoutes } from './api/telephony/carrier-routes.js';
import { callEventsRoute } from './api/telephony/call-events-route.js';
import { callTokenRoute } from './api/telephony/tokens-route.js';
import { CallTokenRequestSchema } from './api/schemas/telephony-tokens.js';
import { authenticateApiKey } from './auth/api-keys.js';
import { CLOSE_CODES, CLOSE_REASONS } from './duplex/close-codes.js';
import { CallRefused, type CallGrant } from './telephony/call/call-connection.js';
import { DEFAULT_CALL_LANGUAGE, DEFAULT_INTERRUPTIBLE, normaliseCallLanguage, type CallSettings } from './telephony/call-settings.js';
import { telephonyTokenSecret } from './telephony/call-token.js';
import { callMedia } from './telephony/call/call-media.js';
import { checkOutbound, parseOutboundPolicy } from './outbound/outbound-policy.js';
import { TelephonyService, type TelephonyModels } from './telephony/telephony-service.js';
import { WebhookSender, webhookOptionsOf } from './telephony/webhooks/index.js';
import { startAudioSocketListener, type AudioSocketListener } from './telephony/carriers/audiosocket-listener.js';
import type { EncoderSource } from './codecs/encoders/speech-encoders.js';
import { SPEECH_MODEL_ID, TRANSCRIPTION_MODEL_ID, TRANSLATION_MODEL_ID } from './engines/model-ids.js';

export interface TelephonySetupDeps {
  config: Config;
  store: Store;
  ledger: Ledger;
  logger: Logger;
  metrics: Metrics;
  engines: EngineRegistry | null;
  vad: VadService | null;
  decoder: DecoderPool;
  /** What calls' voices are encoded with (the server's pools). */
  encoders: EncoderSource;
  /** Calls are registered by the key they act for, so that revoking it ends them. */
  keySessions?: KeySessions;
}

export interface Telephony {
  service: TelephonyService | null;
  routes: RouteDef[];
  /** The AudioSocket listener's port (null: off). */
  audioSocketPort: number | null;
  /**
   * Server shutdown, beside the transport's (whose WebSocket carrier calls end the same way): the AudioSocket
   * calls are told, end as `shutdown`, and are given `graceMs` to close before the rest are cut.
   */
  endCalls(graceMs: number): Promise<void>;
  /** After the calls ended: the service stops, and the webhooks still owed get up to `graceMs` to go out. */
  close(graceMs: number): Promise<void>;
}

/** The model ids a call uses. */
const ASR_MODEL = TRANSCRIPTION_MODEL_ID;
const TTS_MODEL = SPEECH_MODEL_ID;
const MT_MODEL = TRANSLATION_MODEL_ID;

export async function setupTelephony(deps: TelephonySetupDeps): Promise<Telephony> {
  const { config, store, logger } = deps;
  const policy = parseOutboundPolicy(config.outboundAllow);
  const tokenSecret = await telephonyTokenSecret(config.telephonySecret, store);
  const models = modelsOf(deps.engines, deps.vad);
  const checkUrl = async (url: URL) => {
    await checkOutbound(url.toString(), policy);
  };
  const webhooks = new WebhookSender({ store, checkUrl, metrics: deps.metrics, logger }, webhookOptionsOf(config));
  const metrics = telephonyMetrics(deps.metrics);
  const service = models
    ? new TelephonyService({
        store,
        ledger: deps.ledger,
        logger,
        models,
        webhooks,
        tokenSecret,
        policy,
        maxCallsPerAccount: config.telephonyMaxCallsPerAccount,
        startTimeoutMs: config.telephonyStartTimeoutMs,
        relayConnectTimeoutMs: config.telephonyRelayConnectTimeoutMs,
        maxBufferSeconds: config.realtimeMaxBufferSeconds,
        pacerObserver: { frameLateness: (ms) => metrics.frameLateness.observe(ms / 1000) },
        media: callMedia(deps.decoder, checkUrl),
        encoders: deps.encoders,
        metrics,
        ...(deps.keySessions ? { keySessions: deps.keySessions } : {}),
      })
    : null;
  const routes: RouteDef[] = [callTokenRoute({ tokenSecret, outbound: policy })];
  if (service)
    routes.push(...carrierRoutes({ telephony: service, twilioAuthToken: config.twilioAuthToken, publicUrl: config.publicUrl }), callEventsRoute(service));
  let audioSocket: AudioSocketListener | null = null;
  if (service && config.audioSocketPort !== undefined) {
    const settings = audioSocketSettings(config.audioSocketSettings);
    const grant = async (): Promise<CallGrant> => {
      try {
        const caller = await authenticateApiKey(store, config.audioSocketApiKey || undefined);
        return { accountId: caller.account.id, keyId: caller.key.id, settings };
      } catch {
        throw new CallRefused(CLOSE_CODES.policyViolation, CLOSE_REASONS.invalidCallToken, 'KUMA_AUDIOSOCKET_API_KEY is missing, unknown or revoked.');
      }
    };
    audioSocket = await startAudioSocketListener({ host: config.audioSocketHost, port: config.audioSocketPort, opener: service, grant, logger });
  }
  return {
    service,
    routes,
    audioSocketPort: audioSocket?.port ?? null,
    endCalls: async (graceMs) => audioSocket?.close(graceMs),
    async close(graceMs) {
      await audioSocket?.close(graceMs);
      service?.close();
      await webhooks.close(graceMs);
    },
  };
}

/** KUMA_AUDIOSOCKET_SETTINGS (the token request's JSON shape) → the settings of every AudioSocket call. */
export function audioSocketSettings(json: string): CallSettings {
  const body = CallTokenRequestSchema.parse(JSON.parse(json));
  const both = body.language === undefined ? DEFAULT_CALL_LANGUAGE : normaliseCallLanguage(body.language)!;
  return {
    mode: body.mode ?? (body.relay_url !== undefined ? 'relay' : 'transcription'),
    relayUrl: body.relay_url ?? null,
    transcriptionLanguage: body.transcription_language === undefined ? both : normaliseCallLanguage(body.transcription_language)!,
    ttsLanguage: body.tts_language === undefined ? both : normaliseCallLanguage(body.tts_language)!,
    welcomeGreeting: body.welcome_greeting ?? null,
    welcomeGreetingInterruptible: (body.interruptible ?? DEFAULT_INTERRUPTIBLE) !== 'none',
    interruptible: body.interruptible ?? DEFAULT_INTERRUPTIBLE,
  };
}

function modelsOf(engines: EngineRegistry | null, vad: VadService | null): TelephonyModels | null {
  const asr = engines?.get(ASR_MODEL);
  const tts = engines?.get(TTS_MODEL);
  if (!asr || !tts || !vad) return null;
  const mt = engines?.get(MT_MODEL);
  return { asr: { id: ASR_MODEL, engine: asr }, tts: { id: TTS_MODEL, engine: tts }, mt: mt ? { id: MT_MODEL, engine: mt } : null, vad };
}
