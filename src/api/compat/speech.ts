/**
 * POST /audio/speech (SPEC §4.5): text → TTS engine → encoder → socket, streamed as raw audio bytes
 * (`stream_format=audio`) or as `speech.audio.delta` SSE events ending with `speech.audio.done` and its
 * usage (`stream_format=sse`). This file reads and checks the request; synthesis, the hold and the
 * settlement to the characters delivered are speech-synthesis.ts's, shared with the native TTS routes.
 */
import type { z } from 'zod';
import { FORMAT_INFO, formatInfo } from '../../codecs/formats.js';
import { billableCharacters } from '../../billing/metering.js';
import type { SpeechTally } from '../../voice/speech-stream.js';
import { ApiError } from '../errors.js';
import { parseRequest } from '../validation.js';
import type { ApiRequest, ApiResult, OpenApiContent, RouteDef, SseMessage } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import { speechRequestSchema, SpeechAudioDeltaSchema, SpeechAudioDoneSchema } from '../schemas/speech.js';
import { eventStreamContent } from '../schemas/responses.js';
import type { CompatDeps } from './deps.js';
import { resolveModel } from './model-resolution.js';
import { checkFormat, JIFILI_FORMATS, JIFILI_MAX_INPUT, LEGACY_FORMATS, selectSpeaker } from './speech-rules.js';
import { startSpeech } from './speech-synthesis.js';
import { SPEECH_MODEL_ID } from '../../engines/model-ids.js';

type SpeechOptions = { description?: string | null; speaker?: number };

export function speechRoute(deps: CompatDeps): RouteDef {
  const schema = speechRequestSchema(deps.vendor);
  return {
    method: 'POST',
    path: '/audio/speech',
    surface: 'compat',
    auth: true,
    billable: true,
    openapi: {
      operationId: 'createSpeech',
      summary: 'Speak Bambara text',
      tags: ['Audio'],
      request: { contentType: 'application/json', schema: schema.meta({ id: 'SpeechRequest' }) },
      responses: {
        200: {
          description:
            'Audio in the response_format asked for (x-response-formats names the formats of each media type), streamed as it is synthesized; with stream_format=sse, speech.audio.delta events (base64 audio) then speech.audio.done',
          content: [...audioContents(), eventStreamContent('SpeechStreamEvent', [SpeechAudioDeltaSchema, SpeechAudioDoneSchema], { done: false })],
        },
      },
      errors: [404, 422, 503],
    },
    handler: (req, caller) => speak(deps, schema, req, caller!),
  };
}

/** One media type per distinct Content-Type the served formats are sent with, naming those formats. */
function audioContents(): OpenApiContent[] {
  const served = [...new Set([...JIFILI_FORMATS, ...LEGACY_FORMATS])];
  const byType = new Map<string, string[]>();
  for (const format of served) {
    const type = FORMAT_INFO[format].mediaType;
    byType.set(type, [...(byType.get(type) ?? []), format]);
  }
  return [...byType].map(([contentType, responseFormats]) => ({ contentType, responseFormats }));
}

async function speak(deps: CompatDeps, schema: ReturnType<typeof speechRequestSchema>, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  const body = parseRequest(schema, await req.body.json()) as Record<string, unknown> & {
    model: string;
    input: string;
    voice?: string;
    response_format: string;
    stream_format: 'audio' | 'sse';
  };
  const options = (body[deps.vendor] ?? {}) as SpeechOptions;
  const model = resolveModel(deps.catalog, body.model, 'speech', req);
  const format = checkFormat(model.id, body.response_format);
  const characters = billableCharacters(body.input);
  if (!body.input.trim()) throw new ApiError('invalid_value', 'input: there is no text to speak.', { param: 'input' });
  if (model.id === SPEECH_MODEL_ID && characters > JIFILI_MAX_INPUT) {
    throw new ApiError('invalid_value', `input: at most ${JIFILI_MAX_INPUT} characters for jifili-1 (got ${characters}).`, { param: 'input' });
  }
  const speaker = selectSpeaker(model.id, deps.vendor, body.voice, options);
  const { audio, tally, lateHeaders, onDelivered } = await startSpeech(deps, req, caller, { model, format, text: body.input, speaker });
  // Charged by what was handed to the connection (the tally), once the response is over: no end probes.
  if (body.stream_format === 'sse') return { kind: 'sse', events: sseEvents(audio, tally), lateHeaders, onDelivered, confirmDelivery: false };
  return { kind: 'bytes', contentType: formatInfo(format).mediaType, chunks: audio, lateHeaders, onDelivered, confirmDelivery: false };
}

async function* sseEvents(audio: AsyncIterable<Uint8Array>, tally: SpeechTally): AsyncGenerator<SseMessage> {
  for await (const bytes of audio) {
    const delta: z.output<typeof SpeechAudioDeltaSchema> = { type: 'speech.audio.delta', audio: Buffer.from(bytes).toString('base64') };
    yield { data: JSON.stringify(delta) };
  }
  const usage = { input_tokens: tally.charactersDelivered, output_tokens: 0, total_tokens: tally.charactersDelivered };
  yield { data: JSON.stringify(SpeechAudioDoneSchema.parse({ type: 'speech.audio.done', usage })) };
}
