/**
 * Speech translation, shared by POST /audio/translations and the native transcribe routes with
 * `translate_to_french=true` (SPEC §9 maps one onto the other): transcribe the upload (transcription-job.ts),
 * then translate the transcript with the translation model. Two usage records against one request: seconds of
 * decoded audio for the transcription, characters of the transcript for the translation, each at its own
 * rate (SPEC §1). A translation that fails is not charged; the delivered transcription work stays billed.
 */
import { billableCharacters, billableSeconds } from '../../billing/metering.js';
import type { ChargeItem, Reservation } from '../../billing/ledger.js';
import type { ModelEngine } from '../../engines/runtime/model-engine.js';
import type { CatalogModel } from '../model-catalog.js';
import type { ApiRequest } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import type { MultipartForm } from '../uploads.js';
import type { CompatDeps } from './deps.js';
import { engineFor, resolveModel } from './model-resolution.js';
import { allSegments, startTranscription, type TranscriptionJob } from './transcription-job.js';
import { joinSegments } from './transcript.js';
import { chargeOnDelivery } from '../charge-on-delivery.js';
import { TRANSLATION_MODEL_ID } from '../../engines/model-ids.js';

/** The text model that translates transcripts. */
export const TRANSLATION_MODEL = TRANSLATION_MODEL_ID;
/**
 * Transcript characters per second of audio held up front. An estimate, not a limit: speech at a brisk pace
 * gives roughly 15 characters (letters and spaces) a second and the demo voice 7; a longer transcript
 * raises the hold before the translation runs.
 */
export const TRANSCRIPT_CHARACTERS_PER_SECOND = 25;

export interface SpeechTranslation {
  asrModel: CatalogModel;
  asr: ModelEngine;
  mtModel: CatalogModel;
  mt: ModelEngine;
  /** What the ASR engine's `transcribe` method is given. */
  input: Record<string, unknown>;
  target: string;
}

/** The two models and their engines; 503 (before anything is decoded) when the ASR engine has no room. */
export function speechTranslation(deps: CompatDeps, asrModel: CatalogModel, input: Record<string, unknown>, target: string): SpeechTranslation {
  const mtModel = resolveModel(deps.catalog, TRANSLATION_MODEL, 'translation');
  const asr = engineFor(deps.engines, asrModel);
  const mt = engineFor(deps.engines, mtModel);
  const refusal = asr.refusal();
  if (refusal) throw refusal; // before spending anything on decoding
  return { asrModel, asr, mtModel, mt, input, target };
}

/**
 * Starts the transcription with a hold that covers the audio and a transcript of up to
 * TRANSCRIPT_CHARACTERS_PER_SECOND: the transcript's length is not known yet, so the hold starts at what the
 * header declares, grows with each decoded window, and is raised to the exact cost before the translation runs.
 */
export function startSpeechTranslation(
  deps: CompatDeps,
  req: ApiRequest,
  caller: Caller,
  form: MultipartForm,
  plan: SpeechTranslation,
): Promise<TranscriptionJob> {
  const secondPrice = deps.ledger.priceOf('second', 'transcription');
  const characterPrice = deps.ledger.priceOf('character', 'translation');
  const holdFor = (seconds: number) =>
    deps.ledger.costOf(billableSeconds(seconds), secondPrice) +
    deps.ledger.costOf(Math.ceil(billableSeconds(seconds) * TRANSCRIPT_CHARACTERS_PER_SECOND), characterPrice);
  return startTranscription(deps, req, caller, form, { model: plan.asrModel, engine: plan.asr, input: plan.input, holdFor });
}

/** Translates `text` (Bambara) into the plan's target language; an empty text needs no model. */
export async function translateTranscript(plan: SpeechTranslation, text: string, signal: AbortSignal, caller: Caller): Promise<string> {
  if (!text) return '';
  const result = await plan.mt.run<{ translations: string[] }>('translate', { texts: [text], source: 'bam_Latn', target: plan.target }, signal, {
    account: caller.account.id,
  });
  return result.translations[0] ?? '';
}

/** The usage row of translating `transcript`. */
export function translationItem(plan: SpeechTranslation, transcript: string): ChargeItem {
  return { model: plan.mtModel.id, kind: 'translation', unit: 'character', quantity: billableCharacters(transcript) };
}

/**
 * Before the translation of `transcript` runs, its exact cost must be held: a balance that cannot cover it
 * ends the request with 402 here, never below zero later.
 */
export async function holdTranslation(
  deps: CompatDeps,
  reservation: Reservation,
  job: TranscriptionJob,
  plan: SpeechTranslation,
  transcript: string,
): Promise<void> {
  await reservation.growTo(deps.ledger.costOfItems([job.item(), translationItem(plan, transcript)]));
}

/**
 * The whole upload transcribed, then translated; the charge settles once the answer is delivered (put
 * `onDelivered` on the result). The reservation is closed on every path: here when it fails, by onDelivered otherwise.
 */
export async function transcribeAndTranslate(
  deps: CompatDeps,
  req: ApiRequest,
  caller: Caller,
  form: MultipartForm,
  plan: SpeechTranslation,
): Promise<{ translated: string; onDelivered: (delivered: boolean) => Promise<void> }> {
  const job = await startSpeechTranslation(deps, req, caller, form, plan);
  const { reservation } = job;
  let handedOver = false;
  try {
    const transcript = joinSegments(await allSegments(job));
    let translated: string;
    try {
      await holdTranslation(deps, reservation, job, plan, transcript);
      translated = await translateTranscript(plan, transcript, req.signal, caller);
    } catch (err) {
      // The transcription was done and is billed; the failed translation is not. A client that left got
      // nothing, so it is charged nothing.
      if (req.signal.aborted) throw err;
      await reservation.settle([job.item()]);
      throw err;
    }
    const items = [job.item(), translationItem(plan, transcript)];
    handedOver = true;
    return { translated, onDelivered: chargeOnDelivery(reservation, () => items, { logger: deps.logger, requestId: req.requestId }) };
  } finally {
    if (!handedOver) await reservation.release(); // a no-op once settled: a failure or a client gone before then costs nothing
  }
}
