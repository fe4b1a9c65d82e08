/**
 * POST /audio/translations (SPEC §4.4): transcribe Bambara audio, then translate the transcript to English
 * (default) or French with the translation model. Two usage records: seconds of audio for the
 * transcription, characters of the transcript for the translation, each at its own rate. A translation
 * that fails is not charged and the request fails cleanly; the delivered transcription work stays billed.
 */
import { billableCharacters, billableSeconds } from '../../billing/metering.js';
import { ApiError } from '../errors.js';
import { parseRequest } from '../validation.js';
import type { ApiRequest, ApiResult, Caller, RouteDef } from '../types.js';
import { TranscriptionResponseSchema, TranslationFormSchema, TranslationRequestDoc } from '../schemas/audio.js';
import { jsonContent, textContent } from '../schemas/responses.js';
import { MEDIA_TYPES } from '../media-types.js';
import type { CompatDeps } from './deps.js';
import { engineFor, resolveModel } from './model-resolution.js';
import { decodeUploadedAudio } from './uploaded-audio.js';
import { joinSegments, type Segment } from './transcript.js';

/** The text model that translates transcripts. */
const TRANSLATION_MODEL = 'banjugu-1';

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
        200: { description: 'The translated transcript, as JSON or plain text', content: [jsonContent(TranscriptionResponseSchema, ['json']), textContent(MEDIA_TYPES.plainText, ['text'])] },
      },
      errors: [404, 503],
    },
    handler: (req, caller) => translateSpeech(deps, req, caller!),
  };
}

async function translateSpeech(deps: CompatDeps, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  const form = await req.body.multipart();
  try {
    const fields = parseRequest(TranslationFormSchema, form.fields);
    if (fields.response_format !== 'json' && fields.response_format !== 'text') {
      throw new ApiError('invalid_value', `response_format: ${fields.response_format} is not available for translations, because its timings would no longer match the translated words; use json or text.`, {
        param: 'response_format',
      });
    }
    const target = fields.language ?? 'eng_Latn';
    const asrModel = resolveModel(deps.catalog, fields.model, 'transcription');
    const mtModel = resolveModel(deps.catalog, TRANSLATION_MODEL, 'translation');
    const asr = engineFor(deps.engines, asrModel);
    const mt = engineFor(deps.engines, mtModel);
    const audio = await decodeUploadedAudio(form, deps);

    const seconds = billableSeconds(audio.durationSeconds);
    const secondPrice = deps.ledger.priceOf('second', 'transcription');
    // The transcript's length is not known yet: the balance must at least cover the audio.
    await deps.ledger.assertCanAfford(caller.account, deps.ledger.costOf(seconds, secondPrice));
    const ctx = { requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id };

    const input = { samples: audio.samples, ...(asrModel.id === 'sunjata-1' && fields.temperature != null ? { temperature: fields.temperature } : {}) };
    const segments: Segment[] = [];
    for await (const segment of asr.stream<Segment>('transcribe', input, req.signal)) segments.push(segment);
    const transcript = joinSegments(segments);

    let translated: string;
    try {
      const result = transcript
        ? await mt.run<{ translations: string[] }>('translate', { texts: [transcript], source: 'bam_Latn', target }, req.signal)
        : { translations: [''] };
      translated = result.translations[0] ?? '';
    } catch (err) {
      // The transcription was done and is billed; the failed translation is not. A client that left got
      // nothing, so it is charged nothing.
      if (req.signal.aborted) throw err;
      await deps.ledger.charge(ctx, [{ model: asrModel.id, kind: 'transcription', unit: 'second', quantity: seconds }]);
      throw err;
    }
    const characters = billableCharacters(transcript);
    await deps.ledger.charge(ctx, [
      { model: asrModel.id, kind: 'transcription', unit: 'second', quantity: seconds },
      { model: mtModel.id, kind: 'translation', unit: 'character', quantity: characters },
    ]);
    if (fields.response_format === 'text') return { kind: 'text', contentType: MEDIA_TYPES.plainText, body: translated };
    return { kind: 'json', body: { text: translated } };
  } finally {
    await form.dispose();
  }
}
