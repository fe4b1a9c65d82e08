/**
 * The streaming speech sockets' routes (README "Streaming speech socket"): text in, audio out over one
 * WebSocket, for speaking an LLM's answer while it is generated.
 *
 *   GET {prefix}/audio/speech/stream?model=&voice=&output_format= (or response_format=)
 *   GET {prefix}/text-to-speech/:voice_id/stream-input?model_id=&output_format=         (ElevenLabs)
 *   GET {prefix}/text-to-speech/:voice_id/multi-stream-input?model_id=&output_format=   (ElevenLabs, contexts)
 *
 * `model` defaults to jifili-1 and must run phrase by phrase (`info.phraseSynthesis`); on the ElevenLabs
 * paths ElevenLabs' model and voice ids stand for Kuma's (elevenlabs/voice-model.ts). The format is any
 * the model serves, or an ElevenLabs name, encoded at the rate it names (elevenlabs/output-format.ts).
 *
 * Credentials: those of every route (headers, a browser's key subprotocol), an `ek_` client secret, the
 * `xi-api-key` (or `authorization`) query parameter, or — for an upgrade that carries none — `xi_api_key`
 * in the first message (first-message-auth.ts). The balance is checked with the credential (402 at the
 * upgrade). A bad model, voice or format is answered on the socket itself — an error message, then close
 * 1008 — so that a browser, which cannot read an upgrade's HTTP status, learns why.
 */
import { z } from 'zod';
import { ApiError, toApiError } from '../errors.js';
import { EngineNotReadyError } from '../../engines/errors.js';
import type { ApiRequest, ApiResult, OpenApiInfo, RouteDef, WebSocketRouteLimits } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import type { DuplexHandler, DuplexPeer } from '../../duplex/duplex-contract.js';
import type { CompatDeps } from '../compat/deps.js';
import { engineFor, resolveModel } from '../compat/model-resolution.js';
import { selectSpeaker } from '../compat/speech-rules.js';
import { ELEVENLABS_DEFAULT_FORMAT, resolveOutputFormat } from '../elevenlabs/output-format.js';
import { kumaModelId, kumaVoice } from '../elevenlabs/voice-model.js';
import { chooseSubprotocol } from '../subprotocols.js';
import type { FirstMessageAuth } from '../first-message-auth.js';
import { credentialInMessage, errorMessage } from './speech-socket-messages.js';
import type { SpeechSocketDeps, SpeechSocketSetup } from './speech-context.js';
import { SpeechSocket } from './speech-socket.js';
import { MultiContextSocket } from './multi-context-socket.js';
import { SPEECH_MODEL_ID } from '../../engines/model-ids.js';
import { CLOSE_CODES } from '../../duplex/close-codes.js';

/** Inactivity (no message from the client while nothing is being spoken) that ends a socket; ElevenLabs' default. */
export const DEFAULT_INACTIVITY_SECONDS = 20;
export const MAX_INACTIVITY_SECONDS = 180;

/**
 * One message's bound: a message of MAX_MESSAGE_CHARACTERS characters written as JSON escapes is ≈ 60 kB.
 * uWS drops a socket whose message is larger before reading it, so an unauthenticated socket cannot make
 * the server hold more than this for it either.
 */
const SPEECH_SOCKET: WebSocketRouteLimits = { maxPayloadBytes: 128 * 1024 };

const FIRST_MESSAGE_AUTH: FirstMessageAuth = { credential: credentialInMessage, refusal: (err, closeCode) => errorMessage(err, closeCode) };

function openapi(operationId: string, summary: string, multi = false): OpenApiInfo {
  const messages = multi
    ? 'WebSocket (ElevenLabs multi-stream-input messages): {"text", "context_id", "flush"?} adds text to a context (opened by its first message; {"text": " "} opens it), {"text": "", "context_id"} keeps it alive, {"close_context": true, "context_id"} ends it, {"close_socket": true} ends them all and the socket; receive {"audio", "isFinal": null, "normalizedAlignment", "alignment", "contextId"} messages, then {"isFinal": true, "contextId"} per context.'
    : 'WebSocket (ElevenLabs stream-input messages): send {"text": piece} messages, {"flush": true} to speak what is pending, {"text": ""} to end; receive {"audio": base64, "isFinal": null, "normalizedAlignment", "alignment"} messages, then {"isFinal": true}, then a normal close.';
  return {
    operationId,
    summary,
    tags: ['Audio'],
    description: `${messages} The key may also come as ?xi-api-key= or, for an upgrade with none, as "xi_api_key" in the first message; ek_ client secrets are accepted. A plain HTTP request is answered 426.`,
    responses: { 101: { description: 'Switching to the WebSocket protocol' } },
    errors: [426],
  };
}

type Kind = 'single' | 'multi';

export function speechSocketRoutes(deps: CompatDeps): RouteDef[] {
  const common = {
    method: 'GET' as const,
    surface: 'compat' as const,
    auth: true,
    billable: true,
    clientSecrets: true,
    keyQueryParameters: ['xi-api-key', 'authorization'],
    firstMessageAuth: FIRST_MESSAGE_AUTH,
    websocket: SPEECH_SOCKET,
  };
  const elevenLabs = (req: ApiRequest): Asked => ({
    model: kumaModelId(req.query.get('model_id')),
    voice: kumaVoice(req.params.voice_id) ?? null,
    format: req.query.get('output_format') || ELEVENLABS_DEFAULT_FORMAT,
    formatParam: 'output_format',
  });
  return [
    {
      ...common,
      path: '/audio/speech/stream',
      openapi: openapi('streamSpeech', 'Speak text as it arrives (WebSocket)'),
      handler: async (req, caller) => {
        const output = req.query.get('output_format');
        const asked = {
          model: req.query.get('model') || SPEECH_MODEL_ID,
          voice: req.query.get('voice'),
          format: output ?? req.query.get('response_format') ?? 'mp3',
        };
        return socket(
          deps,
          req,
          caller!,
          { ...asked, formatParam: output !== null || req.query.get('response_format') === null ? 'output_format' : 'response_format' },
          'single',
        );
      },
    },
    {
      ...common,
      path: '/text-to-speech/:voice_id/stream-input',
      openapi: openapi('streamSpeechElevenLabs', 'Speak text as it arrives (WebSocket, ElevenLabs path)'),
      handler: async (req, caller) => socket(deps, req, caller!, elevenLabs(req), 'single'),
    },
    {
      ...common,
      path: '/text-to-speech/:voice_id/multi-stream-input',
      openapi: openapi('streamSpeechElevenLabsMultiContext', 'Speak several texts as they arrive, in contexts (WebSocket, ElevenLabs path)', true),
      handler: async (req, caller) => socket(deps, req, caller!, elevenLabs(req), 'multi'),
    },
  ];
}

interface Asked {
  model: string;
  voice: string | null;
  format: string;
  /** The query parameter the format came from, named in its errors. */
  formatParam: string;
}

async function socket(deps: CompatDeps, req: ApiRequest, caller: Caller, asked: Asked, kind: Kind): Promise<ApiResult> {
  let setup: SpeechSocketSetup | ApiError;
  try {
    setup = resolve(deps, req, caller, asked);
  } catch (err) {
    setup = toApiError(err);
  }
  const resolved = setup;
  const socketDeps: SpeechSocketDeps = { ledger: deps.ledger, logger: deps.logger, encoders: deps.encoders };
  return {
    kind: 'duplex',
    // A browser sends its key as a subprotocol beside `realtime`, and needs one it offered answered.
    protocol: chooseSubprotocol(req.headers),
    open(peer: DuplexPeer): DuplexHandler {
      if (resolved instanceof ApiError) return refuse(peer, resolved);
      return kind === 'multi' ? new MultiContextSocket(socketDeps, resolved, peer) : new SpeechSocket(socketDeps, resolved, peer);
    },
  };
}

function resolve(deps: CompatDeps, req: ApiRequest, caller: Caller, asked: Asked): SpeechSocketSetup {
  const model = resolveModel(deps.catalog, asked.model, 'speech');
  const output = resolveOutputFormat(model.id, asked.format, asked.formatParam);
  const speaker = selectSpeaker(model.id, deps.vendor, asked.voice ?? undefined, {});
  const engine = engineFor(deps.engines, model);
  // While it loads its info is empty: say so (503, close 1013), not that it cannot speak text as it arrives.
  if (!engine.ready) throw new EngineNotReadyError(model.id);
  if (engine.info.phraseSynthesis !== true) {
    throw new ApiError('invalid_value', `model: ${model.id} cannot speak text as it arrives; use jifili-1.`, { param: 'model' });
  }
  const speakers = Number(engine.info.speakers ?? 1);
  const inactivity = z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_INACTIVITY_SECONDS)
    .safeParse(req.query.get('inactivity_timeout') ?? DEFAULT_INACTIVITY_SECONDS);
  if (!inactivity.success)
    throw new ApiError('invalid_value', `inactivity_timeout: whole seconds from 1 to ${MAX_INACTIVITY_SECONDS}.`, { param: 'inactivity_timeout' });
  const alphabet = engine.info.alphabet;
  return {
    model: model.id,
    engine,
    format: output.format,
    ...(output.variant ? { variant: output.variant } : {}),
    voice: speaker !== undefined && speaker < speakers ? { speaker } : {},
    speakable: typeof alphabet === 'string' ? new Set(alphabet) : null,
    // Nothing is charged once the key is revoked, whoever revoked it (the socket then closes 1008 key_revoked).
    charge: { requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id, requireActiveKey: true },
    inactivityMs: inactivity.data * 1000,
  };
}

/** A socket whose query was bad (or whose model is loading): the error, then close 1008 (1013); whatever the client sends is ignored. */
function refuse(peer: DuplexPeer, err: ApiError): DuplexHandler {
  // After open() has returned, so the transport has the handler before the socket closes.
  setImmediate(() => {
    // 1013 (try again later) for what a retry can get past: a model still loading or not loaded here.
    const code = err.status === 503 ? CLOSE_CODES.tryAgainLater : CLOSE_CODES.policyViolation;
    peer.sendText(errorMessage(err, code));
    peer.close(code, err.code);
  });
  return { onText() {}, onBinary() {}, onClose() {} };
}
