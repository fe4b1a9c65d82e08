/**
 * Phrase-granular speech synthesis: a planned text (phrase-plan.ts) is synthesized as one short engine job
 * per phrase, each acquiring a replica for that phrase alone — the first phrase as an `opening` job (ahead
 * of every continuation in the engine's queue), the others as `continuation`s, all under the caller's
 * account so the queue serves accounts in turn.
 *
 * Synthesis runs ahead of the consumer (the encoder, pulled by the socket) into a bounded buffer: at most
 * PHRASES_AHEAD phrase synthesized and not yet taken. Then it waits, holding no replica. So per stream the
 * server holds at most the phrase being encoded plus PHRASES_AHEAD phrases of samples (≤ 200 characters of
 * text each, text-chunker.ts), whether the client reads fast, slowly or not at all; a slow reader costs
 * memory (bounded) and never a replica.
 *
 * Leaving the iteration early (client gone, stall timeout, abort of `signal`) cancels the phrase job in
 * flight, if any. A failed phrase ends the stream after the phrases before it were yielded.
 */
import type { JobOptions } from '../engines/runtime/model-engine.js';
import type { PlannedPhrase } from '../engines/tts/phrase-plan.js';
import type { PcmChunk } from './speech-stream.js';

/** Phrases synthesized ahead of the one the consumer holds. One keeps a fast reader's next phrase ready. */
export const PHRASES_AHEAD = 1;

/** What this needs of an engine (ModelEngine.run). */
export interface PhraseEngine {
  run<T>(method: string, input: unknown, signal?: AbortSignal, options?: JobOptions): Promise<T>;
}

export interface Voice {
  speaker?: number;
}

export async function* synthesizePhrases(
  engine: PhraseEngine,
  phrases: PlannedPhrase[],
  voice: Voice,
  signal: AbortSignal,
  account: string,
): AsyncGenerator<PcmChunk> {
  const controller = new AbortController();
  const onAbort = () => controller.abort();
  if (signal.aborted) controller.abort();
  else signal.addEventListener('abort', onAbort, { once: true });

  const buffer: PcmChunk[] = [];
  let failure: { error: unknown } | null = null;
  let finished = false;
  let wakeConsumer: (() => void) | null = null;
  let wakeProducer: (() => void) | null = null;
  const wake = (which: 'consumer' | 'producer') => {
    const w = which === 'consumer' ? wakeConsumer : wakeProducer;
    if (which === 'consumer') wakeConsumer = null;
    else wakeProducer = null;
    w?.();
  };
  const onStop = () => wake('producer');
  controller.signal.addEventListener('abort', onStop, { once: true });

  void (async () => {
    try {
      for (const [index, phrase] of phrases.entries()) {
        while (buffer.length >= PHRASES_AHEAD && !controller.signal.aborted) await new Promise<void>((resolve) => (wakeProducer = resolve));
        if (controller.signal.aborted) return;
        const input = { text: phrase.text, spoken: phrase.spoken, boundaryAfter: phrase.boundaryAfter, index, ...voice };
        const out = await engine.run<{ samples: Float32Array; sampleRate: number }>('synthesizePhrase', input, controller.signal, {
          account,
          priority: index === 0 ? 'opening' : 'continuation',
        });
        buffer.push({ samples: out.samples, sampleRate: out.sampleRate, characters: phrase.characters });
        wake('consumer');
      }
    } catch (error) {
      failure = { error };
    } finally {
      finished = true;
      wake('consumer');
    }
  })();

  try {
    for (;;) {
      const next = buffer.shift();
      if (next) {
        wake('producer'); // room for the next phrase: start it while this one is encoded and sent
        yield next;
        continue;
      }
      if (failure) throw (failure as { error: unknown }).error;
      if (finished) return;
      await new Promise<void>((resolve) => (wakeConsumer = resolve));
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    // Stops the producer: a job in flight is cancelled (its replica is released once the worker confirms).
    controller.abort();
  }
}
