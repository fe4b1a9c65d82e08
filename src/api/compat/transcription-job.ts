/**
 * One transcription of an uploaded file, shared by every route that transcribes one (POST
 * /audio/transcriptions, POST /audio/translations and the native /v1, /v2 transcribe routes), so that they
 * all run the same decoding pipeline, engines, holds and prices: the upload is decoded window by window into
 * the model's engine, and before the model gets each window the request's hold is raised to cover the audio
 * decoded so far (uploaded-audio.ts). The routes differ only in what they do with the segments and when
 * they settle; every route must settle or release `reservation` on every path.
 */
import { billableSeconds } from '../../billing/metering.js';
import type { ChargeItem, Reservation } from '../../billing/ledger.js';
import type { ModelEngine } from '../../engines/runtime/model-engine.js';
import type { CatalogModel } from '../model-catalog.js';
import type { ApiRequest } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import type { MultipartForm } from '../uploads.js';
import type { CompatDeps } from './deps.js';
import { engineFor } from './model-resolution.js';
import { decodedSeconds, heldWindows, openUploadedAudio } from './uploaded-audio.js';
import type { DurationUsage, Segment } from './transcript.js';

export interface TranscriptionPlan {
  model: CatalogModel;
  engine: ModelEngine;
  /** What the engine's `transcribe` method is given (e.g. `{temperature}` on the models that take it). */
  input: Record<string, unknown>;
  /** Micros to hold for `seconds` of audio: the transcription's cost, plus whatever else the route will run on it. */
  holdFor: (seconds: number) => number;
}

export interface TranscriptionJob {
  readonly reservation: Reservation;
  /** Milliseconds to the upload's header (decoding then runs alongside the model). */
  readonly decodeMs: number;
  /** The engine's segments as it decides them; the decode is closed when this ends, however it ends. Iterate once. */
  segments(): AsyncGenerator<Segment>;
  /** Billed seconds of decoded audio, known once the engine has read the last window (before its last segment). */
  usage(): DurationUsage;
  /** The decoded duration itself (unrounded), known at the same time. */
  durationSeconds(): number;
  /** The usage row the transcription is charged as. */
  item(): ChargeItem;
  /** The usage row of the transcription had it ended at `seconds` (what a stream would cost up to there). */
  itemAt(seconds: number): ChargeItem;
}

/** The engine that serves `model`, refusing (503) before anything is spent on decoding when it has no room. */
export function admittingEngine(deps: CompatDeps, model: CatalogModel): ModelEngine {
  const engine = engineFor(deps.engines, model);
  const refusal = engine.refusal();
  if (refusal) throw refusal;
  return engine;
}

/** Micros for `seconds` of transcription at the ledger's price. */
export function transcriptionCost(deps: CompatDeps): (seconds: number) => number {
  const unitPrice = deps.ledger.priceOf('second', 'transcription');
  return (seconds) => deps.ledger.costOf(billableSeconds(seconds), unitPrice);
}

/**
 * Opens the form's `file` (400/413 for an empty, undecodable or over-long upload) and holds what its header
 * declares (an estimate, raised as the audio is decoded; 402 when the account cannot cover it).
 */
export async function startTranscription(
  deps: CompatDeps,
  req: ApiRequest,
  caller: Caller,
  form: MultipartForm,
  plan: TranscriptionPlan,
): Promise<TranscriptionJob> {
  const t0 = performance.now();
  const audio = await openUploadedAudio(form, deps, req.signal, caller.account.id);
  const decodeMs = performance.now() - t0;
  let reservation: Reservation;
  try {
    reservation = await deps.ledger.reserve(
      { requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id },
      plan.holdFor(audio.header.declaredSeconds ?? 0),
    );
  } catch (err) {
    audio.close();
    throw err;
  }
  const windows = heldWindows(audio, reservation, plan.holdFor);
  // The engine's wait queue serves accounts in turn (fair-queue.ts).
  const job = { account: caller.account.id };
  const usage = (): DurationUsage => ({ type: 'duration', seconds: billableSeconds(decodedSeconds(audio)) });
  return {
    reservation,
    decodeMs,
    async *segments() {
      try {
        yield* plan.engine.stream<Segment>('transcribe', plan.input, req.signal, windows, job);
      } finally {
        audio.close(); // a no-op once it was read to the end; else the decode stops here
      }
    },
    usage,
    durationSeconds: () => decodedSeconds(audio),
    item: () => ({ model: plan.model.id, kind: 'transcription', unit: 'second', quantity: usage().seconds }),
    itemAt: (seconds) => ({ model: plan.model.id, kind: 'transcription', unit: 'second', quantity: billableSeconds(seconds) }),
  };
}

/** Every segment of the job, in order (the decode is closed when they are all in, or on failure). */
export async function allSegments(job: TranscriptionJob): Promise<Segment[]> {
  const segments: Segment[] = [];
  for await (const segment of job.segments()) segments.push(segment);
  return segments;
}
