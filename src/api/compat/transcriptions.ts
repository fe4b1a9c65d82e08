/**
 * POST /audio/transcriptions (SPEC §4.3): multipart upload → 16 kHz audio decoded window by window → the
 * model's engine, which takes the windows as they come → json | text | verbose_json | srt | vtt, or
 * (stream=true with json/text) SSE events sent as the engine decides each segment. Billed per second of
 * decoded audio: before any inference the hold covers the duration the file's header declares (when it
 * declares one), and it is raised to the seconds decoded so far before the model gets each window; the
 * charge is recorded only once the transcript is delivered in full (a request that stops earlier releases
 * the hold). Overload is answered with 503 before the upload is read when no transcription engine has
 * room (uploaded-audio.ts).
 */
import { billableSeconds } from '../../billing/metering.js';
import { ApiError } from '../errors.js';
import { parseRequest } from '../validation.js';
import type { ApiRequest, ApiResult, Caller, RouteDef, SseMessage } from '../types.js';
import {
  TranscriptionFormSchema,
  TranscriptionRequestDoc,
  TranscriptionResponseSchema,
  TranscriptTextDeltaEventSchema,
  TranscriptTextDoneEventSchema,
  TranscriptTextSegmentEventSchema,
  VerboseTranscriptionSchema,
} from '../schemas/audio.js';
import { eventStreamContent, jsonContent, textContent } from '../schemas/responses.js';
import { MEDIA_TYPES } from '../media-types.js';
import type { CompatDeps } from './deps.js';
import { engineFor, resolveModel } from './model-resolution.js';
import { assertSpeechToTextAdmits, decodedSeconds, heldWindows, openUploadedAudio } from './uploaded-audio.js';
import { closeWhenDone } from './reserved-stream.js';
import type { Reservation } from '../../billing/ledger.js';
import { doneEvents, joinSegments, segmentEvents, transcriptResult, type DurationUsage, type Segment } from './transcript.js';

/** Models on which `temperature` takes effect (SPEC §4.3, §9); the others ignore it. */
const TEMPERATURE_MODELS = (vendor: string) => new Set(['sunjata-1', `${vendor}-asr-v2`]);

export function transcriptionRoute(deps: CompatDeps): RouteDef {
  return {
    method: 'POST',
    path: '/audio/transcriptions',
    surface: 'compat',
    auth: true,
    billable: true,
    openapi: {
      operationId: 'createTranscription',
      summary: 'Transcribe Bambara audio',
      tags: ['Audio'],
      request: { contentType: 'multipart/form-data', schema: TranscriptionRequestDoc },
      responses: {
        200: {
          description: 'The transcript in the response_format asked for; with stream=true (json or text), transcript.text.segment and .delta events per segment, transcript.text.done, then [DONE]',
          content: [
            jsonContent(TranscriptionResponseSchema, ['json']),
            jsonContent(VerboseTranscriptionSchema, ['verbose_json']),
            textContent(MEDIA_TYPES.plainText, ['text', 'srt']),
            textContent(MEDIA_TYPES.vtt, ['vtt']),
            eventStreamContent('TranscriptionStreamEvent', [TranscriptTextSegmentEventSchema, TranscriptTextDeltaEventSchema, TranscriptTextDoneEventSchema], { done: true }),
          ],
        },
      },
      errors: [404, 503],
    },
    handler: (req, caller) => transcribe(deps, req, caller!),
  };
}

async function transcribe(deps: CompatDeps, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  assertSpeechToTextAdmits(deps);
  const form = await req.body.multipart();
  let reservation: Reservation | undefined;
  let streaming = false;
  try {
    const fields = parseRequest(TranscriptionFormSchema, form.fields);
    const model = resolveModel(deps.catalog, fields.model, 'transcription', req.responseHeaders);
    if (fields.stream && fields.response_format !== 'json' && fields.response_format !== 'text') {
      throw new ApiError('invalid_value', `stream: streaming is supported with response_format json or text, not ${fields.response_format}.`, { param: 'stream' });
    }
    const engine = engineFor(deps.engines, model);
    const refusal = engine.refusal();
    if (refusal) throw refusal; // before spending anything on decoding
    const t0 = performance.now();
    const audio = await openUploadedAudio(form, deps, req.signal, caller.account.id);
    const decodeMs = performance.now() - t0; // to the file's header: decoding then runs alongside the model
    const unitPrice = deps.ledger.priceOf('second', 'transcription');
    const costOf = (seconds: number) => deps.ledger.costOf(billableSeconds(seconds), unitPrice);
    try {
      // Held before any inference: what the header declares (an estimate, raised as the audio is decoded).
      reservation = await deps.ledger.reserve({ requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id }, costOf(audio.header.declaredSeconds ?? 0));
    } catch (err) {
      audio.close();
      throw err;
    }
    const held = reservation;
    const windows = heldWindows(audio, held, costOf);

    const input = TEMPERATURE_MODELS(deps.vendor).has(model.id) && fields.temperature != null ? { temperature: fields.temperature } : {};
    // Known once the last window is decoded, which is before the engine's last segment.
    const usage = (): DurationUsage => ({ type: 'duration', seconds: billableSeconds(decodedSeconds(audio)) });
    // The engine's wait queue serves accounts in turn (fair-queue.ts).
    const job = { account: caller.account.id };
    const charge = () => held.settle([{ model: model.id, kind: 'transcription', unit: 'second', quantity: usage().seconds }]);

    if (fields.stream) {
      streaming = true; // from here the stream owns the reservation: settled at its end, released if it stops early
      const events = streamTranscript(engine.stream<Segment>('transcribe', input, req.signal, windows, job), usage, charge, () => audio.close());
      return { kind: 'sse', events: closeWhenDone(events, () => held.release(), req.signal) };
    }
    const segments: Segment[] = [];
    const t1 = performance.now();
    try {
      for await (const segment of engine.stream<Segment>('transcribe', input, req.signal, windows, job)) segments.push(segment);
    } finally {
      audio.close(); // a no-op once it was read to the end; else the decode stops here
    }
    const engineMs = performance.now() - t1;
    await charge();
    const result = transcriptResult(fields.response_format, segments, { durationSeconds: decodedSeconds(audio), usage: usage(), task: 'transcribe' });
    // Server-Timing splits latency into opening the upload (to its header), the model with the decoding
    // that feeds it (queue included), and the rest.
    return { ...result, headers: { 'server-timing': `decode;dur=${decodeMs.toFixed(1)}, engine;dur=${engineMs.toFixed(1)}` } };
  } finally {
    if (!streaming) await reservation?.release(); // a no-op once settled
    await form.dispose();
  }
}

/** Segment events as the engine decides them; the charge is recorded when the whole transcript went out. */
async function* streamTranscript(segments: AsyncIterable<Segment>, usage: () => DurationUsage, charge: () => Promise<unknown>, close: () => void): AsyncGenerator<SseMessage> {
  const sent: Segment[] = [];
  try {
    for await (const segment of segments) {
      if (!segment.text.trim()) continue;
      yield* segmentEvents(segment, sent.length);
      sent.push(segment);
    }
  } finally {
    close();
  }
  await charge();
  yield* doneEvents(joinSegments(sent), usage());
}
