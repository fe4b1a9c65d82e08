/**
 * ElevenLabs' REST text to speech, on the primary surface's prefixes (README "ElevenLabs clients"):
 *
 *   POST {prefix}/text-to-speech/:voice_id?output_format=          the audio, streamed as it is synthesized
 *   POST {prefix}/text-to-speech/:voice_id/stream?output_format=   the same (ElevenLabs' streaming path)
 *
 * The body is ElevenLabs' JSON: `text` (required), `model_id`, and fields that are accepted and do not
 * change the audio (`voice_settings`, `language_code`, `seed`, `previous_text`, `next_text`,
 * `apply_text_normalization`, `pronunciation_dictionary_locators`, …). ElevenLabs' model and voice ids
 * stand for Kuma's (voice-model.ts); `output_format` (default `mp3_44100_128`, as ElevenLabs') is any
 * ElevenLabs name, encoded at the rate it names (output-format.ts). Synthesis, the hold and the charge for
 * the characters delivered are POST /audio/speech's (compat/speech-synthesis.ts).
 */
import { z } from 'zod';
import { billableCharacters } from '../../billing/metering.js';
import { describeChar, speechText } from '../../engines/tts/speech-text.js';
import { ApiError } from '../errors.js';
import type { ApiRequest, ApiResult, OpenApiInfo, RouteDef } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import { parseRequest } from '../validation.js';
import type { CompatDeps } from '../compat/deps.js';
import { engineFor, resolveModel } from '../compat/model-resolution.js';
import { JIFILI_MAX_INPUT, selectSpeaker } from '../compat/speech-rules.js';
import { startSpeech } from '../compat/speech-synthesis.js';
import { ELEVENLABS_DEFAULT_FORMAT, ELEVENLABS_FORMAT_NAMES, resolveOutputFormat } from './output-format.js';
import { kumaModelId, kumaVoice } from './voice-model.js';
import { SPEECH_MODEL_ID } from '../../engines/model-ids.js';

const TextToSpeechRequestSchema = z
  .looseObject({
    text: z.string().min(1).describe('The text to speak (Bambara).'),
    model_id: z
      .string()
      .nullable()
      .optional()
      .describe('A Kuma speech model, or an ElevenLabs model id (eleven_…), which stands for jifili-1. Default jifili-1.'),
    voice_settings: z.looseObject({}).nullable().optional().describe('Accepted; does not change the audio.'),
    language_code: z.string().nullable().optional(),
    seed: z.number().int().nullable().optional(),
    previous_text: z.string().nullable().optional(),
    next_text: z.string().nullable().optional(),
  })
  .meta({ id: 'ElevenLabsTextToSpeechRequest' });

function openapi(operationId: string, summary: string): OpenApiInfo {
  return {
    operationId,
    summary,
    tags: ['Audio'],
    description: `ElevenLabs' text to speech. Query: \`output_format\` (default ${ELEVENLABS_DEFAULT_FORMAT}): ${ELEVENLABS_FORMAT_NAMES.join(', ')}, any other mp3_<rate>_<kbit/s> pair MPEG allows, pcm_<rate> from 8000 to 48000, or a Kuma format name. The audio is streamed as it is synthesized.`,
    request: { contentType: 'application/json', schema: TextToSpeechRequestSchema },
    responses: {
      200: {
        description: 'The audio in the output_format asked for',
        content: [
          { contentType: 'audio/mpeg' },
          { contentType: 'audio/pcm' },
          { contentType: 'audio/basic' },
          { contentType: 'audio/x-alaw-basic' },
          { contentType: 'audio/ogg' },
        ],
      },
    },
    errors: [404, 422, 503],
  };
}

export function textToSpeechRoutes(deps: CompatDeps): RouteDef[] {
  const common = { method: 'POST' as const, surface: 'compat' as const, auth: true, billable: true };
  return [
    {
      ...common,
      path: '/text-to-speech/:voice_id',
      openapi: openapi('textToSpeechElevenLabs', 'Speak Bambara text (ElevenLabs path)'),
      handler: (req, caller) => speak(deps, req, caller!),
    },
    {
      ...common,
      path: '/text-to-speech/:voice_id/stream',
      openapi: openapi('textToSpeechStreamElevenLabs', 'Speak Bambara text, streamed (ElevenLabs path)'),
      handler: (req, caller) => speak(deps, req, caller!),
    },
  ];
}

async function speak(deps: CompatDeps, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  const body = parseRequest(TextToSpeechRequestSchema, await req.body.json());
  const model = resolveModel(deps.catalog, kumaModelId(body.model_id), 'speech', req);
  const output = resolveOutputFormat(model.id, req.query.get('output_format') || ELEVENLABS_DEFAULT_FORMAT);
  if (!body.text.trim()) throw new ApiError('invalid_value', 'text: there is no text to speak.', { param: 'text' });
  const characters = billableCharacters(body.text);
  if (model.id === SPEECH_MODEL_ID && characters > JIFILI_MAX_INPUT) {
    throw new ApiError(
      'invalid_value',
      `text: at most ${JIFILI_MAX_INPUT} characters for jifili-1 (got ${characters}); send longer text in pieces, or over the stream-input socket.`,
      { param: 'text' },
    );
  }
  const speaker = selectSpeaker(model.id, deps.vendor, kumaVoice(req.params.voice_id), {});
  checkSpeakableText(model.id, engineFor(deps.engines, model).info.alphabet, body.text);
  const { audio, lateHeaders, onDelivered } = await startSpeech(deps, req, caller, {
    model,
    format: output.format,
    ...(output.variant ? { variant: output.variant } : {}),
    text: body.text,
    speaker,
  });
  // Charged by what was handed to the connection (the tally), once the response is over: no end probes.
  return { kind: 'bytes', contentType: output.mediaType, chunks: audio, lateHeaders, onDelivered, confirmDelivery: false };
}

/** Text the voice cannot say is 400 invalid_value naming `text` (this body's field), before anything is held. */
function checkSpeakableText(modelId: string, alphabet: unknown, text: string): void {
  if (typeof alphabet !== 'string') return;
  const spoken = speechText(text, new Set(alphabet));
  if (spoken.unspeakable.length) {
    throw new ApiError(
      'invalid_value',
      `text: ${modelId} cannot pronounce ${spoken.unspeakable.slice(0, 8).map(describeChar).join(', ')}; remove them or write them out in words.`,
      { param: 'text' },
    );
  }
  if (!spoken.text)
    throw new ApiError('invalid_value', `text: there is nothing ${modelId} can say in this text (only punctuation or invisible characters).`, {
      param: 'text',
    });
}
