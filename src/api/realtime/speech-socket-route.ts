/**
 * The streaming speech socket's routes (README "Streaming speech socket"): text in, audio out over one
 * WebSocket, for speaking an LLM's answer while it is generated.
 *
 *   GET {prefix}/audio/speech/stream?model=&voice=&output_format= (or response_format=)
 *   GET {prefix}/text-to-speech/:voice_id/stream-input?model_id=&output_format=   (the ElevenLabs path)
 *
 * `model` defaults to jifili-1 and must run phrase by phrase (`info.phraseSynthesis`); the format is any
 * that model serves over REST, or an ElevenLabs name mapped onto one (`ELEVENLABS_FORMATS`). Auth and the
 * balance are checked on the upgrade (401/402 there); a bad model, voice or format is answered on the socket
 * itself — an error message, then close 1008 — so that a browser, which cannot read an upgrade's HTTP
 * status, learns why.
 */
import { z } from 'zod';
import type { SpeechFormat } from '../../codecs/types.js';
import { isSpeechFormat } from '../../codecs/formats.js';
import { ApiError, toApiError } from '../errors.js';
import { EngineNotReadyError } from '../../engines/errors.js';
import type { ApiRequest, ApiResult, Caller, DuplexPeer, OpenApiInfo, RouteDef } from '../types.js';
import type { CompatDeps } from '../compat/deps.js';
import { engineFor, resolveModel } from '../compat/model-resolution.js';
import { checkFormat, selectSpeaker } from '../compat/speech-rules.js';
import { chooseSubprotocol } from '../subprotocols.js';
import { errorMessage } from './speech-socket-messages.js';
import { SpeechSocket, type SpeechSocketSetup } from './speech-socket.js';

/** Inactivity (no message from the client while nothing is being spoken) that ends a socket; ElevenLabs' default. */
export const DEFAULT_INACTIVITY_SECONDS = 20;
export const MAX_INACTIVITY_SECONDS = 180;

/**
 * ElevenLabs `output_format` names → the format served. PCM and G.711 map where the rate is one Kuma
 * encodes; MP3 and Opus streams declare their own rate in every frame, so every bitrate/rate variant maps
 * to Kuma's one MP3 (24 kHz, 48 kbit/s) and Ogg/Opus (decoded at 48 kHz whatever the name says).
 */
export function elevenLabsFormat(name: string): SpeechFormat | undefined {
  if (name === 'pcm_8000') return 'l16_8000';
  if (name === 'pcm_16000') return 'l16_16000';
  if (name === 'pcm_24000') return 'pcm';
  if (name === 'ulaw_8000') return 'ulaw';
  if (name === 'alaw_8000') return 'alaw';
  if (/^mp3_\d+_\d+$/.test(name)) return 'mp3';
  if (/^opus_48000_\d+$/.test(name)) return 'opus';
  return undefined;
}

const SERVED_ELEVENLABS = 'pcm_8000, pcm_16000, pcm_24000, ulaw_8000, alaw_8000, mp3_<rate>_<bitrate>, opus_48000_<bitrate>';

function openapi(operationId: string, summary: string): OpenApiInfo {
  return {
    operationId,
    summary,
    tags: ['Audio'],
    description:
      'WebSocket (ElevenLabs stream-input messages): send {"text": piece} messages, {"flush": true} to speak what is pending, {"text": ""} to end; receive {"audio": base64, "isFinal": null, "normalizedAlignment", "alignment"} messages, then {"isFinal": true}, then a normal close. A plain HTTP request is answered 426.',
    responses: { 101: { description: 'Switching to the WebSocket protocol' } },
    errors: [426],
  };
}

export function speechSocketRoutes(deps: CompatDeps): RouteDef[] {
  const common = { method: 'GET' as const, surface: 'compat' as const, auth: true, billable: true };
  return [
    {
      ...common,
      path: '/audio/speech/stream',
      openapi: openapi('streamSpeech', 'Speak text as it arrives (WebSocket)'),
      handler: async (req, caller) => socket(deps, req, caller!, { model: req.query.get('model'), voice: req.query.get('voice'), format: req.query.get('output_format') ?? req.query.get('response_format') }),
    },
    {
      ...common,
      path: '/text-to-speech/:voice_id/stream-input',
      openapi: openapi('streamSpeechElevenLabs', 'Speak text as it arrives (WebSocket, ElevenLabs path)'),
      handler: async (req, caller) => socket(deps, req, caller!, { model: req.query.get('model_id'), voice: req.params.voice_id ?? null, format: req.query.get('output_format') }),
    },
  ];
}

interface Asked {
  model: string | null;
  voice: string | null;
  format: string | null;
}

async function socket(deps: CompatDeps, req: ApiRequest, caller: Caller, asked: Asked): Promise<ApiResult> {
  let setup: SpeechSocketSetup | ApiError;
  try {
    setup = resolve(deps, req, caller, asked);
  } catch (err) {
    setup = toApiError(err);
  }
  const resolved = setup;
  return {
    kind: 'duplex',
    // A browser sends its key as a subprotocol beside `realtime`, and needs one it offered answered.
    protocol: chooseSubprotocol(req.headers),
    open(peer: DuplexPeer) {
      if (resolved instanceof ApiError) return refuse(peer, resolved);
      return new SpeechSocket(deps, resolved, peer);
    },
  };
}

function resolve(deps: CompatDeps, req: ApiRequest, caller: Caller, asked: Asked): SpeechSocketSetup {
  const model = resolveModel(deps.catalog, asked.model || 'jifili-1', 'speech');
  const formatName = asked.format || 'mp3';
  const mapped = isSpeechFormat(formatName) ? formatName : elevenLabsFormat(formatName);
  if (!mapped && /^(mp3|pcm|ulaw|alaw|opus|wav)_\d+/.test(formatName)) {
    throw new ApiError('invalid_request', `output_format: ${formatName} is not served; ElevenLabs names served: ${SERVED_ELEVENLABS}.`, { param: 'output_format' });
  }
  const format = checkFormat(model.id, mapped ?? formatName);
  const speaker = selectSpeaker(model.id, deps.vendor, asked.voice ?? undefined, {});
  const engine = engineFor(deps.engines, model);
  // While it loads its info is empty: say so (503, close 1013), not that it cannot speak text as it arrives.
  if (!engine.ready) throw new EngineNotReadyError(model.id);
  if (engine.info.phraseSynthesis !== true) {
    throw new ApiError('invalid_value', `model: ${model.id} cannot speak text as it arrives; use jifili-1.`, { param: 'model' });
  }
  const speakers = Number(engine.info.speakers ?? 1);
  const inactivity = z.coerce.number().int().min(1).max(MAX_INACTIVITY_SECONDS).safeParse(req.query.get('inactivity_timeout') ?? DEFAULT_INACTIVITY_SECONDS);
  if (!inactivity.success) throw new ApiError('invalid_value', `inactivity_timeout: whole seconds from 1 to ${MAX_INACTIVITY_SECONDS}.`, { param: 'inactivity_timeout' });
  const alphabet = engine.info.alphabet;
  return {
    model: model.id,
    engine,
    format,
    voice: speaker !== undefined && speaker < speakers ? { speaker } : {},
    speakable: typeof alphabet === 'string' ? new Set(alphabet) : null,
    // Nothing is charged once the key is revoked, whoever revoked it (the socket then closes 1008 key_revoked).
    charge: { requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id, requireActiveKey: true },
    inactivityMs: inactivity.data * 1000,
  };
}

/** A socket whose query was bad (or whose model is loading): the error, then close 1008 (1013); whatever the client sends is ignored. */
function refuse(peer: DuplexPeer, err: ApiError) {
  // After open() has returned, so the transport has the handler before the socket closes.
  setImmediate(() => {
    // 1013 (try again later) for what a retry can get past: a model still loading or not loaded here.
    const code = err.status === 503 ? 1013 : 1008;
    peer.sendText(errorMessage(err, code));
    peer.close(code, err.code);
  });
  return { onText() {}, onBinary() {}, onClose() {} };
}
