/**
 * POST /audio/translations (SPEC §4.4): transcribe Bambara audio (decoded window by window into the ASR
 * engine, as for transcriptions), then translate the transcript to English (default) or French with the
 * translation model (speech-translation.ts, shared with the native transcribe routes). Two usage records:
 * seconds of decoded audio for the transcription, characters of the transcript for the translation, each at
 * its own rate. A translation that fails is not charged and the
 * request fails cleanly; the delivered transcription work stays billed. Overload of the speech-to-text
 * engines is answered with 503 before the upload is read (uploaded-audio.ts).
 */
import { ApiError } from '../errors.js';
import { parseRequest } from '../validation.js';
import type { ApiRequest, ApiResult, RouteDef } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import { TranscriptionResponseSchema, TranslationFormSchema, TranslationRequestDoc } from '../schemas/audio.js';
import { jsonContent, textContent } from '../schemas/responses.js';
import { MEDIA_TYPES } from '../media-types.js';
import type { CompatDeps } from './deps.js';
import { resolveModel } from './model-resolution.js';
import { assertSpeechToTextAdmits } from './uploaded-audio.js';
import { speechTranslation, transcribeAndTranslate } from './speech-translation.js';
import { TRANSCRIPTION_MODEL_ID } from '../../engines/model-ids.js';

export function translationRoute(deps: CompatDeps): RouteDef {
  return {
    method: 'POST',
    path: '/audio/translations',
    surface: 'compat',
    auth: true,
    billable: true,
    openapi: {
      operationId: 'createTranslation',
      summary: 'Translate Bambara audio into English or French text',
      tags: ['Audio'],
      request: { contentType: 'multipart/form-data', schema: TranslationRequestDoc },
      responses: {
        200: {
          description: 'The translated transcript, as JSON or plain text',
          content: [jsonContent(TranscriptionResponseSchema, ['json']), textContent(MEDIA_TYPES.plainText, ['text'])],
        },
      },
      errors: [404, 503],
    },
    handler: (req, caller) => translateSpeech(deps, req, caller!),
  };
}

async function translateSpeech(deps: CompatDeps, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  assertSpeechToTextAdmits(deps);
  const form = await req.body.multipart();
  try {
    const fields = parseRequest(TranslationFormSchema, form.fields);
    if (fields.response_format !== 'json' && fields.response_format !== 'text') {
      throw new ApiError(
        'invalid_value',
        `response_format: ${fields.response_format} is not available for translations, because its timings would no longer match the translated words; use json or text.`,
        {
          param: 'response_format',
        },
      );
    }
    const target = fields.language ?? 'eng_Latn';
    const asrModel = resolveModel(deps.catalog, fields.model, 'transcription', req);
    const input = asrModel.id === TRANSCRIPTION_MODEL_ID && fields.temperature != null ? { temperature: fields.temperature } : {};
    const { translated, onDelivered } = await transcribeAndTranslate(deps, req, caller, form, speechTranslation(deps, asrModel, input, target));
    if (fields.response_format === 'text') return { kind: 'text', contentType: MEDIA_TYPES.plainText, body: translated, onDelivered };
    return { kind: 'json', body: { text: translated }, onDelivered };
  } finally {
    await form.dispose();
  }
}
