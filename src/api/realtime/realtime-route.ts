/**
 * GET {prefix}/realtime: an OpenAI Realtime transcription (or translation) session over a WebSocket. Auth,
 * limits and the balance check happen before the upgrade (the route table's gate); the session is then
 * opened by realtime-connection.ts. `?intent=transcription` is the usual query; `?model=` may name the
 * speech model (LiveKit and the openai SDK send it: a model that is not speech-to-text is ignored, except
 * that a translation model — banjugu-1 or its aliases — or `?intent=translation` starts a translation
 * session, whose target is `?language=` (fra_Latn / eng_Latn, default eng_Latn) or session.update's
 * audio.output.language). With `?intent=transcription` said explicitly, a translation model in `?model=`
 * (LiveKit's OpenAI STT plugin puts its `model` there and in session.update) starts a transcription session
 * that translates: the speech model hears, each transcript is its translation into `language` (ISO 639-1
 * `fr`/`en` or fra_Latn/eng_Latn, default English).
 */
import type { ModelCatalog } from '../model-catalog.js';
import type { EngineRegistry } from '../../engines/engine-registry.js';
import type { Ledger } from '../../billing/ledger.js';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { VadService } from '../../realtime/vad/contract.js';
import type { InputRateOptions } from '../../realtime/input-rate.js';
import { chooseSubprotocol } from '../subprotocols.js';
import { ApiError } from '../errors.js';
import { EngineNotReadyError } from '../../engines/errors.js';
import type { ApiRequest, ApiResult, RouteDef } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import {
  applyUpdate,
  DEFAULT_FORMAT,
  DEFAULT_SERVER_VAD,
  targetOf as translationTarget,
  type SessionConfig,
  type SpeechModel,
  type TranslationTarget,
} from '../../realtime/session-config.js';
import { RealtimeInputError } from '../../realtime/errors.js';
import { parseClientEvent, RealtimeEventError } from './client-events.js';
import { openConnection, type ResolvedModel } from './realtime-connection.js';
import { TRANSCRIPTION_MODEL_ID, TRANSLATION_MODEL_ID } from '../../engines/model-ids.js';

/** The speech model of a translation session that names none, and the text model that translates. */
const DEFAULT_SPEECH_MODEL = TRANSCRIPTION_MODEL_ID;
const TRANSLATION_MODEL = TRANSLATION_MODEL_ID;

export interface RealtimeDeps {
  catalog: ModelCatalog;
  ledger: Ledger;
  engines: EngineRegistry | null;
  metrics: Metrics;
  logger: Logger;
  /** The VAD service (null: no VAD model, sessions take manual commits only). */
  vad: VadService | null;
  maxBufferSeconds: number;
  /** The input rate bound (absent: DEFAULT_INPUT_RATE). */
  inputRate?: InputRateOptions;
  /** An item's deadline from its commit (absent: FINAL_TIMEOUT_MS); see RealtimeSessionDeps. */
  finalTimeoutMs?: number;
  maxMessageBytes: number;
  /** Whether a turn's interim re-decode may start now (absent: always); see RealtimeSessionDeps. */
  interimAllowed?: () => boolean;
}

export function realtimeRoute(deps: RealtimeDeps): RouteDef {
  return {
    method: 'GET',
    path: '/realtime',
    surface: 'compat',
    auth: true,
    billable: true,
    clientSecrets: true,
    openapi: {
      operationId: 'openRealtimeSession',
      summary: 'Realtime transcription or translation session (WebSocket, OpenAI Realtime protocol)',
      description:
        'Upgrade to a WebSocket (subprotocol `realtime` when offered). Query: `intent=transcription|translation`, `model`, `language`. A plain HTTP request is answered 426.',
      tags: ['Realtime'],
      responses: { 101: { description: 'Switching protocols: the session starts with session.created' } },
      errors: [426],
    },
    handler: (req, caller) => open(deps, req, caller!),
  };
}

async function open(deps: RealtimeDeps, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  const named = req.query.get('model');
  const namedModel = named ? deps.catalog.resolve(named) : undefined;
  const intent = req.query.get('intent');
  const namesTranslator = namedModel?.capability === 'translation';
  const translation = intent === 'translation' || (namesTranslator && intent !== 'transcription');
  const translatingTranscription = namesTranslator && !translation;
  const speechModelId = namedModel?.capability === 'transcription' ? namedModel.id : translation || translatingTranscription ? DEFAULT_SPEECH_MODEL : null;
  const model = speechModelId ? speechModel(deps, speechModelId) : null;
  const translator = deps.engines?.get(TRANSLATION_MODEL) ? { id: TRANSLATION_MODEL, engine: deps.engines.get(TRANSLATION_MODEL)! } : null;
  if ((translation || translatingTranscription) && !translator)
    throw new ApiError('service_unavailable', `The model \`${TRANSLATION_MODEL}\` is not loaded on this server.`, { headers: { 'retry-after': '60' } });
  const language = req.query.get('language');
  const config: SessionConfig = {
    format: DEFAULT_FORMAT,
    model,
    language: translatingTranscription ? language : null,
    prompt: null,
    target: translation ? targetOf(language) : translatingTranscription ? queryTarget(language) : null,
    translationModel: translatingTranscription ? TRANSLATION_MODEL : null,
    turnDetection: deps.vad ? DEFAULT_SERVER_VAD : null,
  };
  const granted = caller.clientSecret ? grantedConfig(deps, caller.clientSecret, config) : config;
  // While the server starts: 503 with Retry-After before the upgrade, which every client can retry — not a
  // session whose voice-activity detection or model then fails.
  for (const engine of [deps.engines?.get('vad'), granted.model?.engine, translation ? translator?.engine : undefined]) {
    if (engine && !engine.ready) throw new EngineNotReadyError(engine.entry.id);
  }
  const connection = openConnection(deps, {
    shape: translation ? 'translation' : 'ga',
    config: granted,
    translator,
    caller,
    requestId: req.requestId,
    resolveModel: (name) => resolveSpeechModel(deps, name),
  });
  return { kind: 'duplex', protocol: chooseSubprotocol(req.headers), open: connection };
}

function targetOf(language: string | null): TranslationTarget {
  if (language === null || language === 'eng_Latn' || language === 'en') return 'eng_Latn';
  if (language === 'fra_Latn' || language === 'fr') return 'fra_Latn';
  throw new ApiError('invalid_value', `language: translation targets are fra_Latn and eng_Latn, not ${JSON.stringify(language).slice(0, 40)}.`, {
    param: 'language',
  });
}

/** A translating transcription session's target from `?language=` (either code; the 400 names the query parameter). */
function queryTarget(language: string | null): TranslationTarget | null {
  try {
    return translationTarget({ language, translationModel: TRANSLATION_MODEL });
  } catch (err) {
    if (err instanceof RealtimeInputError) throw new ApiError('invalid_value', `language: ${err.message}`, { param: 'language' });
    throw err;
  }
}

function speechModel(deps: RealtimeDeps, id: string): SpeechModel {
  const engine = deps.engines?.get(id);
  if (!engine) throw new ApiError('service_unavailable', `The model \`${id}\` is not loaded on this server.`, { headers: { 'retry-after': '60' } });
  return { id, engine };
}

/**
 * A session.update's transcription model name → the speech model, and the translation model when one was
 * named instead: then the default speech model hears and every item is translated (ApiError
 * model_not_found / invalid_value / 503).
 */
function resolveSpeechModel(deps: RealtimeDeps, name: string): ResolvedModel {
  const model = deps.catalog.resolve(name);
  if (!model) throw new ApiError('model_not_found', `The model \`${name}\` does not exist.`, { param: 'session.audio.input.transcription.model' });
  if (model.capability === 'translation') return { model: speechModel(deps, DEFAULT_SPEECH_MODEL), translationModel: TRANSLATION_MODEL };
  if (model.capability !== 'transcription')
    throw new ApiError('invalid_value', `The model \`${name}\` is not a speech-to-text model.`, { param: 'session.audio.input.transcription.model' });
  return { model: speechModel(deps, model.id), translationModel: null };
}

/**
 * A client secret's session (given when it was minted) applied to the starting configuration, as if the
 * client had sent it as its first update; a configuration that does not apply is refused before the upgrade.
 */
function grantedConfig(deps: RealtimeDeps, grant: NonNullable<Caller['clientSecret']>, config: SessionConfig): SessionConfig {
  const type = grant.shape === 'beta' ? 'transcription_session.update' : 'session.update';
  try {
    const event = parseClientEvent(JSON.stringify({ type, session: grant.session }), false);
    if (event.kind !== 'update') return config;
    const { model, ...rest } = event.update;
    return applyUpdate(config, { ...rest, ...(model ? resolveSpeechModel(deps, model) : {}) });
  } catch (err) {
    if (err instanceof RealtimeEventError || err instanceof RealtimeInputError)
      throw new ApiError('invalid_value', `The client secret's session: ${err.message}`, { param: err.param });
    throw err;
  }
}
