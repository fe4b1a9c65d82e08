/**
 * POST /audio/speech (SPEC §4.5): text → TTS engine → encoder → socket, streamed as raw audio bytes
 * (`stream_format=audio`) or as `speech.audio.delta` SSE events ending with `speech.audio.done` and its
 * usage (`stream_format=sse`). The whole input's price is held before synthesis starts; the request then
 * settles to the characters whose audio was delivered (speech-stream.ts decides which), however it ends.
 *
 * A model whose runner synthesizes single phrases (`info.phraseSynthesis`, the VITS runner) is run one
 * short job per phrase, planned here (phrase-synthesis.ts): no request holds a replica for its whole text,
 * and a slow reader holds none at all. Other runners get the whole text as one streamed job.
 */
import type { z } from 'zod';
import { FORMAT_INFO, formatInfo } from '../../codecs/formats.js';
import { billableCharacters } from '../../billing/metering.js';
import { encodeSpeech, type PcmChunk, type SpeechTally } from '../../pipeline/speech-stream.js';
import { synthesizePhrases } from '../../pipeline/phrase-synthesis.js';
import { planPhrases } from '../../engines/tts/phrase-plan.js';
import { ApiError } from '../errors.js';
import { parseRequest } from '../validation.js';
import type { ApiRequest, ApiResult, Caller, OpenApiContent, RouteDef, SseMessage } from '../types.js';
import { speechRequestSchema, SpeechAudioDeltaSchema, SpeechAudioDoneSchema } from '../schemas/speech.js';
import { eventStreamContent } from '../schemas/responses.js';
import type { CompatDeps } from './deps.js';
import { engineFor, resolveModel } from './model-resolution.js';
import { checkFormat, checkSpeakable, JIFILI_FORMATS, JIFILI_MAX_INPUT, LEGACY_FORMATS, selectSpeaker } from './speech-rules.js';
import { closeWhenDone } from './reserved-stream.js';

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
        200: {
          description: 'Audio in the response_format asked for (x-response-formats names the formats of each media type), streamed as it is synthesized; with stream_format=sse, speech.audio.delta events (base64 audio) then speech.audio.done',
          content: [...audioContents(), eventStreamContent('SpeechStreamEvent', [SpeechAudioDeltaSchema, SpeechAudioDoneSchema], { done: false })],
        },
      },
      errors: [404, 422, 503],
    },
    handler: (req, caller) => speak(deps, schema, req, caller!),
  };
}

/** One media type per distinct Content-Type the served formats are sent with, naming those formats. */
function audioContents(): OpenApiContent[] {
  const served = [...new Set([...JIFILI_FORMATS, ...LEGACY_FORMATS])];
  const byType = new Map<string, string[]>();
  for (const format of served) {
    const type = FORMAT_INFO[format].mediaType;
    byType.set(type, [...(byType.get(type) ?? []), format]);
  }
  return [...byType].map(([contentType, responseFormats]) => ({ contentType, responseFormats }));
}

async function speak(deps: CompatDeps, schema: ReturnType<typeof speechRequestSchema>, req: ApiRequest, caller: Caller): Promise<ApiResult> {
  const body = parseRequest(schema, await req.body.json()) as Record<string, unknown> & { model: string; input: string; voice?: string; response_format: string; stream_format: 'audio' | 'sse' };
  const options = (body[deps.vendor] ?? {}) as SpeechOptions;
  const model = resolveModel(deps.catalog, body.model, 'speech', req.responseHeaders);
  const format = checkFormat(model.id, body.response_format);
  const characters = billableCharacters(body.input);
  if (!body.input.trim()) throw new ApiError('invalid_value', 'input: there is no text to speak.', { param: 'input' });
  if (model.id === 'jifili-1' && characters > JIFILI_MAX_INPUT) {
    throw new ApiError('invalid_value', `input: at most ${JIFILI_MAX_INPUT} characters for jifili-1 (got ${characters}).`, { param: 'input' });
  }
  const speaker = selectSpeaker(model.id, deps.vendor, body.voice, options);
  const engine = engineFor(deps.engines, model);
  // Text the voice cannot say is refused before anything is held or synthesized.
  checkSpeakable(model.id, engine.info.alphabet, body.input);
  const alphabet = engine.info.alphabet;
  const phrases = engine.info.phraseSynthesis === true ? planPhrases(body.input, typeof alphabet === 'string' ? new Set(alphabet) : null) : null;
  // The hold is exact: a speech request is charged at most its whole input.
  const ctx = { requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id };
  const reservation = await deps.ledger.reserve(ctx, deps.ledger.costOf(characters, deps.ledger.priceOf('character', 'speech')));
  try {
    // A speaker the voice does not have (a single-speaker model) keeps the model's own voice.
    const speakers = Number(engine.info.speakers ?? 1);
    const input = { text: body.input, ...(speaker !== undefined && speaker < speakers ? { speaker } : {}) };
    const tally: SpeechTally = { charactersDelivered: 0, bytesDelivered: 0 };
    const timing = { engineFirstMs: NaN, firstBytesMs: NaN };
    const started = performance.now();
    const synthesis = phrases
      ? synthesizePhrases(engine, phrases, input.speaker !== undefined ? { speaker: input.speaker } : {}, req.signal, caller.account.id)
      : engine.stream<PcmChunk>('synthesize', input, req.signal, undefined, { account: caller.account.id });
    const pcm = timed(synthesis, (ms) => (timing.engineFirstMs = ms), started);
    // Settles to the characters delivered (releasing the hold when none were), however the stream ends.
    const settle = () =>
      reservation
        .settle([{ model: model.id, kind: 'speech', unit: 'character', quantity: tally.charactersDelivered }])
        .then(() => {}, (err: Error) => deps.logger.error({ requestId: req.requestId, err: err.message }, 'recording speech usage failed'));
    const audio = timed(closeWhenDone(encodeSpeech(pcm, format, tally), settle, req.signal), (ms) => (timing.firstBytesMs = ms), started);
    // Server-Timing of the first chunk: the model's time to its first PCM, and to the first encoded bytes.
    const lateHeaders = () => ({ 'server-timing': `engine-first;dur=${timing.engineFirstMs.toFixed(2)}, first-bytes;dur=${timing.firstBytesMs.toFixed(2)}` });

    if (body.stream_format === 'sse') return { kind: 'sse', events: sseEvents(audio, tally), lateHeaders };
    return { kind: 'bytes', contentType: formatInfo(format).mediaType, chunks: audio, lateHeaders };
  } catch (err) {
    await reservation.release();
    throw err;
  }
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

async function* sseEvents(audio: AsyncIterable<Uint8Array>, tally: SpeechTally): AsyncGenerator<SseMessage> {
  for await (const bytes of audio) {
    const delta: z.output<typeof SpeechAudioDeltaSchema> = { type: 'speech.audio.delta', audio: Buffer.from(bytes).toString('base64') };
    yield { data: JSON.stringify(delta) };
  }
  const usage = { input_tokens: tally.charactersDelivered, output_tokens: 0, total_tokens: tally.charactersDelivered };
  yield { data: JSON.stringify(SpeechAudioDoneSchema.parse({ type: 'speech.audio.done', usage })) };
}
