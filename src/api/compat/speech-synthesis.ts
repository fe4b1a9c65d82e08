/**
 * Text → speech bytes, paid for: the one synthesis path behind POST /audio/speech and the native TTS routes
 * (/v1/models/tts, /v2/models/tts, /v2/models/tts/stream), so both surfaces share the engine, the encoder
 * pipeline, the hold, the price and the delivered-characters settlement (README, "Speech").
 *
 * The caller has already resolved the model, the format and the speaker and validated its own fields; this
 * refuses text the voice cannot say, holds the whole input's price, starts synthesis and returns the
 * encoded audio. The hold settles to the characters whose audio was delivered however the stream ends —
 * finished, failed, or abandoned by the client — so nothing is charged for audio not delivered. It settles
 * when the transport is done with the response (the result's onDelivered): after the stream's last bytes
 * were written to the network, so a crash before then leaves no charge.
 *
 * A model whose runner synthesizes single phrases (`info.phraseSynthesis`, the VITS runner) is run one
 * short job per phrase, planned here (phrase-synthesis.ts): no request holds a replica for its whole text,
 * and a slow reader holds none at all. Other runners get the whole text as one streamed job.
 */
import { billableCharacters } from '../../billing/metering.js';
import { planPhrases } from '../../engines/tts/phrase-plan.js';
import { encodeSpeech, type PcmChunk, type SpeechTally } from '../../voice/speech-stream.js';
import { synthesizePhrases } from '../../voice/phrase-synthesis.js';
import type { EncodingVariant, SpeechFormat } from '../../codecs/types.js';
import type { AudioChunker } from '../../voice/audio-chunks.js';
import type { CatalogModel } from '../model-catalog.js';
import type { ApiRequest } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import type { CompatDeps } from './deps.js';
import { engineFor } from './model-resolution.js';
import { closeWhenDone } from './reserved-stream.js';
import { checkSpeakable } from './speech-rules.js';
import { settleDelivered } from '../charge-on-delivery.js';

export interface SpeechJob {
  model: CatalogModel;
  format: SpeechFormat;
  /** The format at another rate (the ElevenLabs names); its own when absent. */
  variant?: EncodingVariant;
  text: string;
  /** The engine speaker (selectSpeaker), or undefined for the model's own voice. */
  speaker: number | undefined;
  /** Regroups the audio into chunks of a fixed length of audio (the native streaming TTS's chunk_size). */
  chunker?: AudioChunker;
}

export interface StartedSpeech {
  /** The encoded audio, pulled by the transport; the reservation closes when it ends. */
  audio: AsyncGenerator<Uint8Array>;
  /** Characters and bytes delivered so far: what is charged and reported. */
  tally: SpeechTally;
  /** Server-Timing of the first chunk, sent with the status line. */
  lateHeaders: () => Record<string, string>;
  /** The result's onDelivered: settles to the characters delivered (the tally), releasing the hold when none were. */
  onDelivered: (delivered: boolean) => Promise<void>;
}

export async function startSpeech(deps: CompatDeps, req: ApiRequest, caller: Caller, job: SpeechJob): Promise<StartedSpeech> {
  const { model, format, text } = job;
  const characters = billableCharacters(text);
  const engine = engineFor(deps.engines, model);
  // Text the voice cannot say is refused before anything is held or synthesized.
  checkSpeakable(model.id, engine.info.alphabet, text);
  const alphabet = engine.info.alphabet;
  const phrases = engine.info.phraseSynthesis === true ? planPhrases(text, typeof alphabet === 'string' ? new Set(alphabet) : null) : null;
  // The hold is exact: a speech request is charged at most its whole input.
  const ctx = { requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id };
  const reservation = await deps.ledger.reserve(ctx, deps.ledger.costOf(characters, deps.ledger.priceOf('character', 'speech')));
  try {
    // A speaker the voice does not have (a single-speaker model) keeps the model's own voice.
    const speakers = Number(engine.info.speakers ?? 1);
    const input = { text, ...(job.speaker !== undefined && job.speaker < speakers ? { speaker: job.speaker } : {}) };
    const tally: SpeechTally = { charactersDelivered: 0, bytesDelivered: 0 };
    const timing = { engineFirstMs: NaN, firstBytesMs: NaN };
    const started = performance.now();
    const synthesis = phrases
      ? synthesizePhrases(engine, phrases, input.speaker !== undefined ? { speaker: input.speaker } : {}, req.signal, caller.account.id)
      : engine.stream<PcmChunk>('synthesize', input, req.signal, undefined, { account: caller.account.id });
    const pcm = timed(synthesis, (ms) => (timing.engineFirstMs = ms), started);
    // Settles to the characters delivered (releasing the hold when none were), however the stream ended: the
    // tally already counts a cut stream's share, and every phrase once the stream went out to its end.
    const onDelivered = () =>
      settleDelivered(reservation, [{ model: model.id, kind: 'speech', unit: 'character', quantity: tally.charactersDelivered }], {
        logger: deps.logger,
        requestId: req.requestId,
      });
    // closeWhenDone stops synthesis when the client leaves before the stream is pulled; billing waits for onDelivered.
    const audio = timed(
      closeWhenDone(encodeSpeech(pcm, format, tally, job.chunker, caller.account.id, job.variant, deps.encoders), async () => {}, req.signal),
      (ms) => (timing.firstBytesMs = ms),
      started,
    );
    // Server-Timing of the first chunk: the model's time to its first PCM, and to the first encoded bytes.
    const lateHeaders = () => ({ 'server-timing': `engine-first;dur=${timing.engineFirstMs.toFixed(2)}, first-bytes;dur=${timing.firstBytesMs.toFixed(2)}` });
    return { audio, tally, lateHeaders, onDelivered };
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
