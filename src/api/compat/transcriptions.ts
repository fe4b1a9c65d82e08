/**
 * POST /audio/transcriptions (SPEC §4.3): multipart upload → 16 kHz audio decoded window by window → the
 * model's engine, which takes the windows as they come → json | text | verbose_json | srt | vtt, or
 * (stream=true with json/text) SSE events sent as the engine decides each segment. Billed per second of
 * decoded audio: before any inference the hold covers the duration the file's header declares (when it
 * declares one), and it is raised to the seconds decoded so far before the model gets each window; the
 * charge is recorded only once the transcript is delivered in full, its last bytes written to the network
 * (charge-on-delivery.ts; a request that stops earlier releases the hold). Overload is answered with 503 before the upload is read when no transcription engine has
 * room (uploaded-audio.ts).
 */
import { ApiError } from '../errors.js';
import { parseRequest } from '../validation.js';
import type { ApiRequest, ApiResult, RouteDef, SseMessage } from '../types.js';
import type { Caller } from '../../auth/caller.js';
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
import { resolveModel } from './model-resolution.js';
import { assertSpeechToTextAdmits } from './uploaded-audio.js';
import { admittingEngine, allSegments, startTranscription, transcriptionCost } from './transcription-job.js';
import { closeWhenDone } from './reserved-stream.js';
import { chargeOnDelivery } from '../charge-on-delivery.js';
import type { Reservation } from '../../billing/ledger.js';
import { doneEvents, joinSegments, segmentEvents, transcriptResult, type DurationUsage, type Segment } from './transcript.js';
import { TRANSCRIPTION_MODEL_ID } from '../../engines/model-ids.js';

/** Models on which `temperature` takes effect (SPEC §4.3, §9); the others ignore it. */
const TEMPERATURE_MODELS = (vendor: string) => new Set([TRANSCRIPTION_MODEL_ID, `${vendor}-asr-v2`]);

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
          description:
            'The transcript in the response_format asked for; with stream=true (json or text), transcript.text.segment and .delta events per segment, transcript.text.done, then [DONE]',
          content: [
            jsonContent(TranscriptionResponseSchema, ['json']),
            jsonContent(VerboseTranscriptionSchema, ['verbose_json']),
            textContent(MEDIA_TYPES.plainText, ['text', 'srt']),
            textContent(MEDIA_TYPES.vtt, ['vtt']),
            eventStreamContent('TranscriptionStreamEvent', [TranscriptTextSegmentEventSchema, TranscriptTextDeltaEventSchema, TranscriptTextDoneEventSchema], {
              done: true,
            }),
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
  let handedOver = false; // the result's onDelivered settles or releases the reservation from then on
  try {
    const fields = parseRequest(TranscriptionFormSchema, form.fields);
    const model = resolveModel(deps.catalog, fields.model, 'transcription', req);
    if (fields.stream && fields.response_format !== 'json' && fields.response_format !== 'text') {
      throw new ApiError('invalid_value', `stream: streaming is supported with response_format json or text, not ${fields.response_format}.`, {
        param: 'stream',
      });
    }
    const engine = admittingEngine(deps, model); // before spending anything on decoding
    const input = TEMPERATURE_MODELS(deps.vendor).has(model.id) && fields.temperature != null ? { temperature: fields.temperature } : {};
    const job = await startTranscription(deps, req, caller, form, { model, engine, input, holdFor: transcriptionCost(deps) });
    reservation = job.reservation;
    const onDelivered = chargeOnDelivery(reservation, () => [job.item()], { logger: deps.logger, requestId: req.requestId });

    if (fields.stream) {
      handedOver = true; // settled once the whole stream went out, released if it stops early
      const events = streamTranscript(job.segments(), job.usage);
      return { kind: 'sse', events: closeWhenDone(events, async () => {}, req.signal), onDelivered };
    }
    const t1 = performance.now();
    const segments = await allSegments(job);
    const engineMs = performance.now() - t1;
    const words = [fields.timestamp_granularities ?? []].flat().includes('word');
    const result = transcriptResult(fields.response_format, segments, {
      durationSeconds: job.durationSeconds(),
      usage: job.usage(),
      task: 'transcribe',
      words,
    });
    handedOver = true;
    // Server-Timing splits latency into opening the upload (to its header), the model with the decoding
    // that feeds it (queue included), and the rest.
    return { ...result, headers: { 'server-timing': `decode;dur=${job.decodeMs.toFixed(1)}, engine;dur=${engineMs.toFixed(1)}` }, onDelivered };
  } finally {
    if (!handedOver) await reservation?.release(); // a failure before the answer costs nothing
    await form.dispose();
  }
}

/** Segment events as the engine decides them, then the done events (charged once all of it went out). */
async function* streamTranscript(segments: AsyncIterable<Segment>, usage: () => DurationUsage): AsyncGenerator<SseMessage> {
  const sent: Segment[] = [];
  // The segments' own generator closes the decode when it ends, however it ends.
  for await (const segment of segments) {
    if (!segment.text.trim()) continue;
    yield* segmentEvents(segment, sent.length);
    sent.push(segment);
  }
  yield* doneEvents(joinSegments(sent), usage());
}
