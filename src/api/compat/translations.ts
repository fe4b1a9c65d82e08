/**
 * POST /audio/translations (SPEC §4.4): transcribe Bambara audio (decoded window by window into the ASR
 * engine, as for transcriptions), then translate the transcript to English (default) or French with the
 * translation model. Two usage records: seconds of decoded audio for the transcription, characters of the
 * transcript for the translation, each at its own rate. A translation that fails is not charged and the
 * request fails cleanly; the delivered transcription work stays billed. Overload of the speech-to-text
 * engines is answered with 503 before the upload is read (uploaded-audio.ts).
 */
import { billableCharacters, billableSeconds } from '../../billing/metering.js';
import { ApiError } from '../errors.js';
import { parseRequest } from '../validation.js';
import type { ApiRequest, ApiResult, Caller, RouteDef } from '../types.js';
import { TranscriptionResponseSchema, TranslationFormSchema, TranslationRequestDoc } from '../schemas/audio.js';
import { errorResponses } from '../schemas/responses.js';
import type { CompatDeps } from './deps.js';
import { engineFor, resolveModel } from './model-resolution.js';
import { assertSpeechToTextAdmits, decodedSeconds, openUploadedAudio } from './uploaded-audio.js';
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
      responses: { 200: { description: 'The translation (json or text/plain)', schema: TranscriptionResponseSchema }, ...errorResponses(400, 401, 402, 404, 413, 503) },
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
      throw new ApiError('invalid_value', `response_format: ${fields.response_format} is not available for translations, because its timings would no longer match the translated words; use json or text.`, {
        param: 'response_format',
      });
    }
    const target = fields.language ?? 'eng_Latn';
    const asrModel = resolveModel(deps.catalog, fields.model, 'transcription');
    const mtModel = resolveModel(deps.catalog, TRANSLATION_MODEL, 'translation');
    const asr = engineFor(deps.engines, asrModel);
    const mt = engineFor(deps.engines, mtModel);
    const refusal = asr.refusal();
    if (refusal) throw refusal; // before spending anything on decoding
    const audio = await openUploadedAudio(form, deps, req.signal);

    const segments: Segment[] = [];
    try {
      // The transcript's length is not known yet: the balance must at least cover the audio, as far as the
      // file's header declares it (1 micro when it declares nothing; the charge uses the decoded duration).
      const declared = audio.header.declaredSeconds;
      const secondPrice = deps.ledger.priceOf('second', 'transcription');
      await deps.ledger.assertCanAfford(caller.account, declared === undefined ? 1 : deps.ledger.costOf(billableSeconds(declared), secondPrice));
      const input = asrModel.id === 'sunjata-1' && fields.temperature != null ? { temperature: fields.temperature } : {};
      for await (const segment of asr.stream<Segment>('transcribe', input, req.signal, audio)) segments.push(segment);
    } finally {
      audio.close(); // a no-op once it was read to the end; else the decode stops here
    }
    const seconds = billableSeconds(decodedSeconds(audio));
    const ctx = { requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id };
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
    if (fields.response_format === 'text') return { kind: 'text', contentType: 'text/plain; charset=utf-8', body: translated };
    return { kind: 'json', body: { text: translated } };
  } finally {
    await form.dispose();
  }
}
