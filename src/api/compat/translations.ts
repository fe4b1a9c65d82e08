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
import { jsonContent, textContent } from '../schemas/responses.js';
import { MEDIA_TYPES } from '../media-types.js';
import type { CompatDeps } from './deps.js';
import { engineFor, resolveModel } from './model-resolution.js';
import { assertSpeechToTextAdmits, decodedSeconds, heldWindows, openUploadedAudio } from './uploaded-audio.js';
import { joinSegments, type Segment } from './transcript.js';
import type { Reservation } from '../../billing/ledger.js';

/** The text model that translates transcripts. */
const TRANSLATION_MODEL = 'banjugu-1';
/**
 * Transcript characters per second of audio held up front. An estimate, not a limit: speech at a brisk pace
 * gives roughly 15 characters (letters and spaces) a second and the demo voice 7; a longer transcript
 * raises the hold before the translation runs.
 */
export const TRANSCRIPT_CHARACTERS_PER_SECOND = 25;

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
  assertSpeechToTextAdmits(deps);
  const form = await req.body.multipart();
  let reservation: Reservation | undefined;
  try {
    const fields = parseRequest(TranslationFormSchema, form.fields);
    if (fields.response_format !== 'json' && fields.response_format !== 'text') {
      throw new ApiError('invalid_value', `response_format: ${fields.response_format} is not available for translations, because its timings would no longer match the translated words; use json or text.`, {
        param: 'response_format',
      });
    }
    const target = fields.language ?? 'eng_Latn';
    const asrModel = resolveModel(deps.catalog, fields.model, 'transcription', req.responseHeaders);
    const mtModel = resolveModel(deps.catalog, TRANSLATION_MODEL, 'translation');
    const asr = engineFor(deps.engines, asrModel);
    const mt = engineFor(deps.engines, mtModel);
    const refusal = asr.refusal();
    if (refusal) throw refusal; // before spending anything on decoding
    const audio = await openUploadedAudio(form, deps, req.signal, caller.account.id);

    const secondPrice = deps.ledger.priceOf('second', 'transcription');
    const characterPrice = deps.ledger.priceOf('character', 'translation');
    const ctx = { requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id };
    // The transcript's length is not known yet: the hold covers the audio and a transcript of up to
    // TRANSCRIPT_CHARACTERS_PER_SECOND; it starts at what the header declares, grows with each decoded window,
    // and once the transcript exists it is raised to its exact cost.
    const heldFor = (seconds: number) =>
      deps.ledger.costOf(billableSeconds(seconds), secondPrice) + deps.ledger.costOf(Math.ceil(billableSeconds(seconds) * TRANSCRIPT_CHARACTERS_PER_SECOND), characterPrice);
    const segments: Segment[] = [];
    try {
      reservation = await deps.ledger.reserve(ctx, heldFor(audio.header.declaredSeconds ?? 0));
      const input = asrModel.id === 'sunjata-1' && fields.temperature != null ? { temperature: fields.temperature } : {};
      for await (const segment of asr.stream<Segment>('transcribe', input, req.signal, heldWindows(audio, reservation, heldFor), { account: caller.account.id })) segments.push(segment);
    } finally {
      audio.close(); // a no-op once it was read to the end; else the decode stops here
    }
    const seconds = billableSeconds(decodedSeconds(audio));
    const secondsCost = deps.ledger.costOf(seconds, secondPrice);
    const transcriptionItem = { model: asrModel.id, kind: 'transcription', unit: 'second', quantity: seconds } as const;
    const transcript = joinSegments(segments);
    const characters = billableCharacters(transcript);

    let translated: string;
    try {
      // Before the translation runs, its exact cost must be held: a balance that cannot cover it ends the
      // request with 402 here (the transcription, which was held, is charged), never below zero later.
      await reservation.growTo(secondsCost + deps.ledger.costOf(characters, characterPrice));
      const result = transcript
        ? await mt.run<{ translations: string[] }>('translate', { texts: [transcript], source: 'bam_Latn', target }, req.signal, { account: caller.account.id })
        : { translations: [''] };
      translated = result.translations[0] ?? '';
    } catch (err) {
      // The transcription was done and is billed; the failed translation is not. A client that left got
      // nothing, so it is charged nothing.
      if (req.signal.aborted) throw err;
      await reservation.settle([transcriptionItem]);
      throw err;
    }
    await reservation.settle([transcriptionItem, { model: mtModel.id, kind: 'translation', unit: 'character', quantity: characters }]);
    if (fields.response_format === 'text') return { kind: 'text', contentType: MEDIA_TYPES.plainText, body: translated };
    return { kind: 'json', body: { text: translated } };
  } finally {
    await reservation?.release(); // a no-op once settled: a failure or a client gone before then costs nothing
    await form.dispose();
  }
}
