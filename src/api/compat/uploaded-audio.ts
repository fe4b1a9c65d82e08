/**
 * The audio file of a multipart request, decoded (in the decoder process pool) to 16 kHz mono for the
 * speech models as a stream of bounded windows, so that a request holds its upload's bytes and a few
 * windows of samples, never the whole decoded audio (a 1 MB FLAC of two hours of silence is 460 MB of
 * samples). Empty, undecodable and over-long uploads become 400 / 413 envelopes naming `file`.
 *
 * Also the overload rule for the speech-to-text routes, checked before the upload is read: when no
 * engine that could serve the request has room (every transcription model's replicas busy and queue
 * full), or the decoder pool's wait queue is full, the answer is 503 with Retry-After at once.
 */
import type { DecodedStream } from '../../codecs/decode/decoded-stream.js';
import type { Reservation } from '../../billing/ledger.js';
import type { DecoderPool } from '../../codecs/decode/decoder-pool.js';
import type { EngineRegistry } from '../../engines/engine-registry.js';
import type { ModelEngine } from '../../engines/runtime/model-engine.js';
import { ApiError } from '../errors.js';
import type { ModelCatalog } from '../model-catalog.js';
import type { MultipartForm } from '../uploads.js';

export const ASR_SAMPLE_RATE = 16000;

export interface AudioInputDeps {
  decoder: DecoderPool;
  maxAudioSeconds: number;
}

/**
 * Starts decoding the form's `file` and resolves once its header is read (format, declared duration):
 * the windows then come as the consumer reads them. The decoder has the upload by then (a small one's
 * bytes; a big one, spooled to disk, it reads from its file itself, so that its bytes never cross the
 * server's event loop), so the form can be disposed of at once. `signal` cancels the decode. `accountId` is
 * whose turn the upload takes when it has to wait for a decoder: accounts are served in turn, so one
 * account's backlog does not hold up another's upload.
 */
export async function openUploadedAudio(form: MultipartForm, deps: AudioInputDeps, signal: AbortSignal, accountId: string): Promise<DecodedStream> {
  const file = form.files.file;
  if (!file) {
    const sentAsText = typeof form.fields.file === 'string';
    throw new ApiError('missing_required_parameter', sentAsText ? 'file: expected an uploaded file, got a text field' : 'file: Field required', {
      param: 'file',
    });
  }
  if (file.size === 0) throw new ApiError('invalid_value', 'file: the uploaded file is empty.', { param: 'file' });
  const options = { targetRate: ASR_SAMPLE_RATE, maxDurationSeconds: deps.maxAudioSeconds };
  if (file.path !== null) return deps.decoder.open({ path: file.path, size: file.size }, options, signal, accountId);
  const bytes = await file.read();
  return deps.decoder.open(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), options, signal, accountId);
}

/**
 * The decoded windows on their way to the model, each one paid for first: before a window goes on, the
 * request's hold is raised to `costOf(seconds decoded so far)`. So the model never works on audio the
 * account cannot cover, however long the upload turns out to be; a balance that runs out ends the request
 * with 402 (InsufficientQuotaError) and nothing is charged. The settlement, at the end, is the decoded
 * seconds: never more than the hold.
 */
export async function* heldWindows(audio: DecodedStream, reservation: Reservation, costOf: (seconds: number) => number): AsyncGenerator<Float32Array> {
  let samples = 0;
  try {
    for await (const window of audio) {
      samples += window.length;
      await reservation.growTo(costOf(samples / ASR_SAMPLE_RATE));
      yield window;
    }
  } finally {
    audio.close();
  }
}

/** The decoded duration, known once the stream has given its last window (the engine read them all). */
export function decodedSeconds(audio: DecodedStream): number {
  const summary = audio.summary;
  if (!summary) throw new Error('the decoded stream was not read to its end');
  return summary.durationSeconds;
}

/**
 * Refuses a speech-to-text request before its body is read when it could not start anyway: every engine
 * serving a transcription model is saturated, or the decoder pool's wait queue is full. A request for one
 * saturated model while another has room is refused after the body (its `model` field is in the body),
 * before any decoding.
 */
export function assertSpeechToTextAdmits(deps: { catalog: ModelCatalog; engines: EngineRegistry | null; decoder: DecoderPool }): void {
  const busy = deps.decoder.refusal();
  if (busy) throw busy; // mapped to 503 with Retry-After (errors.ts)
  const engines = new Set<ModelEngine>();
  for (const model of deps.catalog.list()) {
    const engine = model.capability === 'transcription' ? deps.engines?.get(model.id) : undefined;
    if (engine) engines.add(engine);
  }
  if (engines.size === 0) return; // nothing loaded: the handler answers its own 503 once it knows the model
  const refusals = [...engines].map((engine) => engine.refusal());
  if (refusals.some((refusal) => refusal === null)) return;
  const seconds = Math.min(...refusals.map((refusal) => refusal!.retryAfterSeconds));
  throw new ApiError('service_unavailable', `The speech-to-text models are at capacity. Please retry after ${seconds} s.`, {
    headers: { 'retry-after': String(seconds) },
  });
}
