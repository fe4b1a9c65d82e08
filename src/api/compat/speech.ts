/**
 * POST /audio/speech (SPEC §4.5): text → TTS engine → encoder → socket, streamed as raw audio bytes
 * (`stream_format=audio`) or as `speech.audio.delta` SSE events ending with `speech.audio.done` and its
 * usage (`stream_format=sse`). Billed per input character actually delivered: a stream that fails
 * midway, or whose client leaves, is charged for the phrases whose audio went out, and nothing else.
 */
import { formatInfo } from '../../codecs/formats.js';
import { billableCharacters } from '../../billing/metering.js';
import { encodeSpeech, type PcmChunk, type SpeechTally } from '../../pipeline/speech-stream.js';
import { ApiError } from '../errors.js';
import { parseRequest } from '../validation.js';
import type { ApiRequest, ApiResult, Caller, RouteDef, SseMessage } from '../types.js';
import { speechRequestSchema, SpeechAudioDoneSchema } from '../schemas/speech.js';
import { errorResponses } from '../schemas/responses.js';
import type { CompatDeps } from './deps.js';
import { engineFor, resolveModel } from './model-resolution.js';
import { checkFormat, checkSpeakable, JIFILI_MAX_INPUT, selectSpeaker } from './speech-rules.js';

type SpeechOptions = { description?: string | null; speaker?: number };

export function speechRoute(deps: CompatDeps): RouteDef {
  const schema = speechRequestSchema(deps.vendor);
  return {
    method: 'POST',
    path: '/audio/speech',
    surface: 'compat',
    auth: true,
    billable: true,
    openapi: {
      operationId: 'createSpeech',
      summary: 'Speak Bambara text',
      tags: ['Audio'],
      request: { contentType: 'application/json', schema: schema.meta({ id: 'SpeechRequest' }) },
      responses: {
        200: { description: 'Audio bytes in the requested format, or text/event-stream of speech.audio.delta events then speech.audio.done', contentType: 'application/octet-stream' },
        ...errorResponses(400, 401, 402, 404, 422, 503),
      },
    },
    handler: (req, caller) => speak(deps, schema, req, caller!),
  };
}

async function speak(deps: CompatDeps, schema: ReturnType<typeof speechRequestSchema>, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  const body = parseRequest(schema, await req.body.json()) as Record<string, unknown> & { model: string; input: string; voice?: string; response_format: string; stream_format: 'audio' | 'sse' };
  const options = (body[deps.vendor] ?? {}) as SpeechOptions;
  const model = resolveModel(deps.catalog, body.model, 'speech');
  const format = checkFormat(model.id, body.response_format);
  const characters = billableCharacters(body.input);
  if (!body.input.trim()) throw new ApiError('invalid_value', 'input: there is no text to speak.', { param: 'input' });
  if (model.id === 'jifili-1' && characters > JIFILI_MAX_INPUT) {
    throw new ApiError('invalid_value', `input: at most ${JIFILI_MAX_INPUT} characters for jifili-1 (got ${characters}).`, { param: 'input' });
  }
  const speaker = selectSpeaker(model.id, deps.vendor, body.voice, options);
  const engine = engineFor(deps.engines, model);
  checkSpeakable(model.id, engine.info.alphabet, body.input);
  await deps.ledger.assertCanAfford(caller.account, deps.ledger.costOf(characters, deps.ledger.priceOf('character', 'speech')));

  // A speaker the voice does not have (a single-speaker model) keeps the model's own voice.
  const speakers = Number(engine.info.speakers ?? 1);
  const input = { text: body.input, ...(speaker !== undefined && speaker < speakers ? { speaker } : {}) };
  const tally: SpeechTally = { charactersDelivered: 0, bytesDelivered: 0 };
  const timing = { engineFirstMs: NaN, firstBytesMs: NaN };
  const started = performance.now();
  const pcm = timed(engine.stream<PcmChunk>('synthesize', input, req.signal), (ms) => (timing.engineFirstMs = ms), started);
  const charge = async () => {
    if (tally.charactersDelivered === 0) return;
    await deps.ledger.charge({ requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id }, [
      { model: model.id, kind: 'speech', unit: 'character', quantity: tally.charactersDelivered },
    ]);
  };
  const audio = timed(charged(encodeSpeech(pcm, format, tally), charge, deps), (ms) => (timing.firstBytesMs = ms), started);
  // Server-Timing of the first chunk: the model's time to its first PCM, and to the first encoded bytes.
  const lateHeaders = () => ({ 'server-timing': `engine-first;dur=${timing.engineFirstMs.toFixed(2)}, first-bytes;dur=${timing.firstBytesMs.toFixed(2)}` });

  if (body.stream_format === 'sse') return { kind: 'sse', events: sseEvents(audio, tally), lateHeaders };
  return { kind: 'bytes', contentType: formatInfo(format).mediaType, chunks: audio, lateHeaders };
}

/** Passes items through, reporting when the first one arrived (ms since `since`). */
async function* timed<T>(source: AsyncIterable<T>, onFirst: (ms: number) => void, since: number): AsyncGenerator<T> {
  let first = true;
  for await (const item of source) {
    if (first) {
      onFirst(performance.now() - since);
      first = false;
    }
    yield item;
  }
}

/** Runs `charge` once the stream ends, however it ends (done, failed, or abandoned by the client). */
async function* charged<T>(source: AsyncGenerator<T>, charge: () => Promise<void>, deps: CompatDeps): AsyncGenerator<T> {
  try {
    yield* source;
  } finally {
    await charge().catch((err: Error) => deps.logger.error({ err: err.message }, 'recording speech usage failed'));
  }
}

async function* sseEvents(audio: AsyncIterable<Uint8Array>, tally: SpeechTally): AsyncGenerator<SseMessage> {
  for await (const bytes of audio) {
    yield { data: JSON.stringify({ type: 'speech.audio.delta', audio: Buffer.from(bytes).toString('base64') }) };
  }
  const usage = { input_tokens: tally.charactersDelivered, output_tokens: 0, total_tokens: tally.charactersDelivered };
  yield { data: JSON.stringify(SpeechAudioDoneSchema.parse({ type: 'speech.audio.done', usage })) };
}
