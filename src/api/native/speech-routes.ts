/**
 * The native TTS routes (SPEC §4.7, PROTOCOLS §6), on the primary surface's synthesis path
 * (compat/speech-synthesis.ts): same engines, encoders, hold, price per character and settlement to the
 * characters delivered as POST /audio/speech with the same legacy model.
 * - POST /v1/models/tts: `{text, speaker}` → WAV from djelia-tts-v1 (speaker 0–4, default 1).
 * - POST /v2/models/tts: `{text, description, format}` → the whole audio in that format from djelia-tts-v2;
 *   a description naming Moussa, Sekou or Seydou picks that voice (speech-rules.ts selectSpeaker).
 * - POST /v2/models/tts/stream: the same, streamed in chunks of `chunk_size` seconds of audio
 *   (voice/audio-chunks.ts says how chunks map onto each format).
 * Validation problems are 422 `detail` entries; text the voice cannot say is 400 `{detail}`, as on the
 * primary surface (with the native field's name).
 */
import { FORMAT_INFO, formatInfo } from '../../codecs/formats.js';
import type { SpeechFormat } from '../../codecs/types.js';
import { AudioChunker, chunkLayout } from '../../voice/audio-chunks.js';
import { ApiError } from '../errors.js';
import type { CompatDeps } from '../compat/deps.js';
import { resolveModel } from '../compat/model-resolution.js';
import { checkFormat, selectSpeaker } from '../compat/speech-rules.js';
import { startSpeech, type SpeechJob } from '../compat/speech-synthesis.js';
import type { ApiRequest, ApiResult, OpenApiContent, OpenApiInfo, RouteDef } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import { readNativeJson } from './native-json-body.js';
import { parseNative } from './native-validation.js';
import { NATIVE_TTS_FORMATS, TtsV1RequestSchema, TtsV2RequestSchema, TtsV2StreamRequestSchema } from './speech-schemas.js';

const TAGS = ['Native (deprecated)'];

export function nativeSpeechRoutes(deps: CompatDeps): RouteDef[] {
  const route = (
    path: string,
    operationId: string,
    summary: string,
    request: NonNullable<OpenApiInfo['request']>,
    content: OpenApiContent[],
    handler: RouteDef['handler'],
  ): RouteDef => ({
    method: 'POST',
    path,
    surface: 'native',
    auth: true,
    billable: true,
    openapi: { operationId, summary, tags: TAGS, request, responses: { 200: { description: summary, content } }, errors: [422] },
    handler,
  });
  return [
    route(
      '/v1/models/tts',
      'nativeTtsV1',
      'Speak Bambara text as WAV (djelia-tts-v1, speaker 0–4)',
      { contentType: 'application/json', schema: TtsV1RequestSchema },
      [{ contentType: FORMAT_INFO.wav.mediaType, responseFormats: ['wav'] }],
      (req, caller) => speakV1(deps, req, caller!),
    ),
    route(
      '/v2/models/tts',
      'nativeTtsV2',
      'Speak Bambara text in mp3, wav, wav_8k or ulaw_8k (djelia-tts-v2)',
      { contentType: 'application/json', schema: TtsV2RequestSchema },
      audioContents(),
      (req, caller) => speakV2(deps, req, caller!, false),
    ),
    route(
      '/v2/models/tts/stream',
      'nativeTtsV2Stream',
      'Speak Bambara text, streamed in chunks of chunk_size seconds of audio (djelia-tts-v2)',
      { contentType: 'application/json', schema: TtsV2StreamRequestSchema },
      audioContents(),
      (req, caller) => speakV2(deps, req, caller!, true),
    ),
  ];
}

/** One media type per Content-Type of the native formats, naming its formats (`x-response-formats`). */
function audioContents(): OpenApiContent[] {
  const byType = new Map<string, string[]>();
  for (const format of NATIVE_TTS_FORMATS) byType.set(FORMAT_INFO[format].mediaType, [...(byType.get(FORMAT_INFO[format].mediaType) ?? []), format]);
  return [...byType].map(([contentType, responseFormats]) => ({ contentType, responseFormats }));
}

async function speakV1(deps: CompatDeps, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  const body = parseNative(TtsV1RequestSchema, await readNativeJson(req), 'body');
  const model = legacyModel(deps, 'tts-v1');
  const speaker = selectSpeaker(model.id, deps.vendor, undefined, { speaker: body.speaker ?? 1 });
  return speak(deps, req, caller, { model, format: 'wav', text: body.text, speaker });
}

async function speakV2(deps: CompatDeps, req: ApiRequest, caller: Caller, streamed: boolean): Promise<ApiResult> {
  const raw = await readNativeJson(req);
  const body = streamed ? parseNative(TtsV2StreamRequestSchema, raw, 'body') : parseNative(TtsV2RequestSchema, raw, 'body');
  const model = legacyModel(deps, 'tts-v2');
  const format = checkFormat(model.id, body.format ?? 'mp3') as (typeof NATIVE_TTS_FORMATS)[number];
  const speaker = selectSpeaker(model.id, deps.vendor, undefined, { description: body.description });
  const chunkSeconds = 'chunk_size' in body ? ((body.chunk_size as number | null | undefined) ?? 1) : 1;
  const chunker = streamed ? new AudioChunker(chunkLayout(format, chunkSeconds)) : undefined;
  return speak(deps, req, caller, { model, format, text: body.text, speaker, ...(chunker ? { chunker } : {}) });
}

/** The legacy model a native route speaks with (SPEC §9): until the retirement date, as the routes are. */
function legacyModel(deps: CompatDeps, name: 'tts-v1' | 'tts-v2') {
  // No response headers passed: the route's own Deprecation/Link (native-surface.ts) are the ones to send.
  return resolveModel(deps.catalog, `${deps.vendor}-${name}`, 'speech');
}

async function speak(deps: CompatDeps, req: ApiRequest, caller: Caller, job: SpeechJob): Promise<ApiResult> {
  try {
    const { audio, lateHeaders, onDelivered } = await startSpeech(deps, req, caller, job);
    // Charged by the tally once the response is over; each chunk stays one HTTP chunk (chunk_size).
    return { kind: 'bytes', contentType: formatInfo(job.format as SpeechFormat).mediaType, chunks: audio, lateHeaders, onDelivered, confirmDelivery: false };
  } catch (err) {
    // The primary surface names its field `input`; the native request calls it `text`.
    if (err instanceof ApiError && err.param === 'input') throw new ApiError(err.code, err.message.replace(/^input:/, 'text:'), { param: 'text' });
    throw err;
  }
}
