/**
 * POST /v1|/v2/models/transcribe and their /stream variants (SPEC §4.7, §6), with and without /api: the
 * Djelia SDKs' transcription calls, on the primary surface's pipeline, engines, ledger and prices
 * (transcription-job.ts, speech-translation.ts). v1 runs the legacy model `{vendor}-asr-v1`, v2
 * `{vendor}-asr-v2`; `translate_to_french=true` is POST /audio/translations with language fra_Latn (SPEC §9).
 * Other multipart fields the SDKs send are ignored. Deprecation headers and retirement are applied by
 * native-surface.ts; errors are written as `{detail}` by the transport.
 */
import { z } from 'zod';
import type { CompatDeps } from '../compat/deps.js';
import { resolveModel } from '../compat/model-resolution.js';
import { closeWhenDone } from '../compat/reserved-stream.js';
import { speechTranslation, startSpeechTranslation, transcribeAndTranslate } from '../compat/speech-translation.js';
import { admittingEngine, allSegments, startTranscription, transcriptionCost } from '../compat/transcription-job.js';
import { assertSpeechToTextAdmits } from '../compat/uploaded-audio.js';
import { jsonContent } from '../schemas/responses.js';
import type { ApiRequest, ApiResult, OpenApiInfo, RouteDef } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import { readTranscribeRequest } from './transcribe-request.js';
import { frenchLines, FrenchTranscriptionSchema, NativeSegmentSchema, nativeSegment, NDJSON, segmentLines, type StreamCharge } from './transcribe-stream.js';
import { chargeOnDelivery } from '../charge-on-delivery.js';

type Version = 1 | 2;

const UploadDoc = z.object({ file: z.string().meta({ format: 'binary' }) }).meta({ id: 'NativeTranscriptionUpload' });

const QUERY_WORDS =
  'Query `translate_to_french` (boolean, default false: true/false, 1/0, yes/no, on/off, t/f, y/n in any case; empty or `null` is the default).';

export function nativeTranscribeRoutes(deps: CompatDeps): RouteDef[] {
  return ([1, 2] as const).flatMap((version) => [transcribeRoute(deps, version, false), transcribeRoute(deps, version, true)]);
}

function transcribeRoute(deps: CompatDeps, version: Version, stream: boolean): RouteDef {
  return {
    method: 'POST',
    path: `/v${version}/models/transcribe${stream ? '/stream' : ''}`,
    surface: 'native',
    auth: true,
    billable: true,
    openapi: stream ? streamDoc(version) : wholeDoc(version),
    handler: (req, caller) => transcribe(deps, version, stream, req, caller!),
  };
}

async function transcribe(deps: CompatDeps, version: Version, stream: boolean, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  assertSpeechToTextAdmits(deps); // 503 before the upload is read, as on the primary surface
  const { translateToFrench, form } = await readTranscribeRequest(req);
  try {
    // No response headers given: the route's own deprecation headers (successor: the primary route) stand.
    const model = resolveModel(deps.catalog, `${deps.vendor}-asr-v${version}`, 'transcription');
    const log = { logger: deps.logger, requestId: req.requestId };
    if (translateToFrench) {
      const plan = speechTranslation(deps, model, {}, 'fra_Latn');
      if (!stream) {
        const { translated, onDelivered } = await transcribeAndTranslate(deps, req, caller, form, plan);
        return { kind: 'json', body: { text: translated }, onDelivered };
      }
      const job = await startSpeechTranslation(deps, req, caller, form, plan);
      const charge: StreamCharge = { items: null };
      return ndjson(
        closeWhenDone(frenchLines(deps, req, caller, job, plan, charge), async () => {}, req.signal),
        chargeOnDelivery(job.reservation, () => charge.items ?? [], log),
      );
    }
    const job = await startTranscription(deps, req, caller, form, { model, engine: admittingEngine(deps, model), input: {}, holdFor: transcriptionCost(deps) });
    if (stream) {
      const charge: StreamCharge = { items: null };
      return ndjson(
        closeWhenDone(segmentLines(job, charge), async () => {}, req.signal),
        chargeOnDelivery(job.reservation, () => charge.items ?? [], log),
      );
    }
    let handedOver = false;
    try {
      const segments = await allSegments(job);
      handedOver = true;
      return {
        kind: 'json',
        body: segments.map(nativeSegment).filter((segment) => segment !== null),
        onDelivered: chargeOnDelivery(job.reservation, () => [job.item()], log),
      };
    } finally {
      if (!handedOver) await job.reservation.release(); // a failure before the answer costs nothing
    }
  } finally {
    await form.dispose(); // the upload's bytes went to the decoder when it opened
  }
}

/** The transport writes a 'bytes' result with backpressure; its first line is awaited before the status goes out. */
function ndjson(chunks: AsyncIterable<Uint8Array>, onDelivered: (delivered: boolean) => Promise<void>): ApiResult {
  return { kind: 'bytes', contentType: NDJSON, chunks, headers: { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' }, onDelivered };
}

function wholeDoc(version: Version): OpenApiInfo {
  return {
    operationId: `nativeTranscribeV${version}`,
    summary: `Transcribe Bambara audio (native v${version}, model djelia-asr-v${version})`,
    description: `${QUERY_WORDS} false: an array of segments; true: the whole transcript in French.`,
    tags: ['Native (deprecated)'],
    request: { contentType: 'multipart/form-data', schema: UploadDoc },
    responses: {
      200: {
        description: 'translate_to_french=false: the segments {text, start, end} (seconds); true: {text}, the transcript translated into French',
        content: [jsonContent(z.union([z.array(NativeSegmentSchema), FrenchTranscriptionSchema]))],
      },
    },
    errors: [422],
  };
}

function streamDoc(version: Version): OpenApiInfo {
  return {
    operationId: `nativeTranscribeStreamV${version}`,
    summary: `Transcribe Bambara audio as NDJSON, segment by segment (native v${version}, model djelia-asr-v${version})`,
    description: `${QUERY_WORDS} One JSON object per line, written as the model decides each segment.`,
    tags: ['Native (deprecated)'],
    request: { contentType: 'multipart/form-data', schema: UploadDoc },
    responses: {
      200: {
        description:
          'NDJSON: per segment {text, start, end} (seconds); with translate_to_french=true, {text}: the transcript so far in French (the last line is the whole transcript). A failure after the first line ends the stream early.',
        content: [
          {
            contentType: NDJSON,
            schema: z.string().meta({
              id: 'NativeTranscriptionStream',
              description: 'Lines of NativeTranscriptionSegment, or of FrenchTranscriptionResponse with translate_to_french=true, each ended by \\n',
            }),
          },
        ],
      },
    },
    errors: [422],
  };
}
