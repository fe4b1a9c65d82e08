/**
 * POST /audio/transcriptions (SPEC §4.3): multipart upload → 16 kHz audio decoded window by window → the
 * model's engine, which takes the windows as they come → json | text | verbose_json | srt | vtt, or
 * (stream=true with json/text) SSE events sent as the engine decides each segment. Billed per second of
 * decoded audio: checked against the balance before any inference (on the duration the file's header
 * declares, or 1 micro when it declares none) and recorded once the transcript is delivered in full, when
 * the decoded duration is known. Overload is answered with 503 before the upload is read when no
 * transcription engine has room (uploaded-audio.ts).
 */
import { billableSeconds } from '../../billing/metering.js';
import { ApiError } from '../errors.js';
import { parseRequest } from '../validation.js';
import type { ApiRequest, ApiResult, Caller, RouteDef, SseMessage } from '../types.js';
import { TranscriptionFormSchema, TranscriptionRequestDoc, TranscriptionResponseSchema } from '../schemas/audio.js';
import { errorResponses } from '../schemas/responses.js';
import type { CompatDeps } from './deps.js';
import { engineFor, resolveModel } from './model-resolution.js';
import { assertSpeechToTextAdmits, decodedSeconds, openUploadedAudio } from './uploaded-audio.js';
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
        200: { description: 'The transcript (json, text, verbose_json, srt, vtt, or text/event-stream when stream=true)', schema: TranscriptionResponseSchema },
        ...errorResponses(400, 401, 402, 404, 413, 415, 503),
      },
    },
    handler: (req, caller) => transcribe(deps, req, caller!),
  };
}

async function transcribe(deps: CompatDeps, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  assertSpeechToTextAdmits(deps);
  const form = await req.body.multipart();
  try {
    const fields = parseRequest(TranscriptionFormSchema, form.fields);
    const model = resolveModel(deps.catalog, fields.model, 'transcription');
    if (fields.stream && fields.response_format !== 'json' && fields.response_format !== 'text') {
      throw new ApiError('invalid_value', `stream: streaming is supported with response_format json or text, not ${fields.response_format}.`, { param: 'stream' });
    }
    const engine = engineFor(deps.engines, model);
    const refusal = engine.refusal();
    if (refusal) throw refusal; // before spending anything on decoding
    const t0 = performance.now();
    const audio = await openUploadedAudio(form, deps, req.signal);
    const decodeMs = performance.now() - t0; // to the file's header: decoding then runs alongside the model
    try {
      // The duration is known up front only where the container declares it; the charge uses the decoded one.
      const declared = audio.header.declaredSeconds;
      const unitPrice = deps.ledger.priceOf('second', 'transcription');
      await deps.ledger.assertCanAfford(caller.account, declared === undefined ? 1 : deps.ledger.costOf(billableSeconds(declared), unitPrice));
    } catch (err) {
      audio.close();
      throw err;
    }

    const input = TEMPERATURE_MODELS(deps.vendor).has(model.id) && fields.temperature != null ? { temperature: fields.temperature } : {};
    const usage = (): DurationUsage => ({ type: 'duration', seconds: billableSeconds(decodedSeconds(audio)) });
    const charge = () =>
      deps.ledger.charge({ requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id }, [
        { model: model.id, kind: 'transcription', unit: 'second', quantity: usage().seconds },
      ]);

    if (fields.stream) {
      return { kind: 'sse', events: streamTranscript(engine.stream<Segment>('transcribe', input, req.signal, audio), usage, charge, () => audio.close()) };
    }
    const segments: Segment[] = [];
    const t1 = performance.now();
    try {
      for await (const segment of engine.stream<Segment>('transcribe', input, req.signal, audio)) segments.push(segment);
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
