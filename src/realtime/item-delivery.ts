/**
 * Delivering one committed item of a realtime session: hold its cost, decode it (the final transcript, and the
 * translation in a translation session), emit `completed`, and settle the charge once that event has left the
 * process (the session's `delivered`) — or emit `failed`, releasing the hold, when the item cannot be
 * delivered. An item whose client left first (the session's signal aborted, or the socket closed before the
 * event was written) costs nothing; so does a process killed before the event was written. A charge that
 * cannot be recorded after delivery is logged, never turned into a `failed` for a transcript the client has.
 * The session runs its items through here one after another, so `completed` events keep commit order.
 */
import { InsufficientQuotaError } from '../billing/errors.js';
import { EngineOverloadedError } from '../engines/errors.js';
import { ItemBilling } from './item-billing.js';
import type { RealtimeSessionDeps } from './session-deps.js';
import type { SessionConfig, SpeechModel } from './session-config.js';
import type { FatalCode, SessionOutput } from './session-events.js';
import { KeyRevokedError } from '../store/store-errors.js';
import type { FinalLimits, TurnRecognizer } from './turn-transcriber.js';

/** An item as committed: its audio, the transcriber that may already have sent interim deltas, and its models. */
export interface CommittedItem {
  itemId: string;
  samples: Float32Array;
  transcriber: TurnRecognizer;
  model: SpeechModel;
  target: SessionConfig['target'];
  /** When the VAD turn's speech_stopped went out (performance.now()), for the end-of-speech latency metric. */
  stoppedAt?: number;
  /** Committed by the idle timeout: audio the VAD scored as silence, charged only if its transcript has words. */
  idle?: boolean;
  /** When it was committed (performance.now()): its deadline counts from here. */
  committedAt: number;
  /** A VAD turn's samples up to a little past where its ending silence began (FinalLimits); absent: all. */
  speechSamples?: number;
}

/** Default of RealtimeSessionDeps.finalTimeoutMs. */
export const FINAL_TIMEOUT_MS = 10_000;

/** The item's transcript was not ready within the deadline (the server is overloaded). */
class ItemTimeout extends Error {
  constructor(readonly ms: number) {
    super(`The transcription of this item did not finish within ${ms / 1000} s of its commit (the server is overloaded); it was not charged.`);
  }
}

/** What delivery needs from its session. */
export interface DeliveryContext {
  deps: RealtimeSessionDeps;
  /** Aborted when the client is gone: nothing more is emitted or charged. */
  signal: AbortSignal;
  emit(output: SessionOutput): void;
  /** Ends the session with a fatal error (balance exhausted, key revoked). */
  fatal(code: FatalCode, message: string): void;
}

export async function deliverItem(ctx: DeliveryContext, job: CommittedItem): Promise<void> {
  if (ctx.signal.aborted) return;
  // The item's work is cancelled when the client goes, or when its deadline passes (counted from its commit,
  // so waiting behind the session's earlier items counts too).
  const timeoutMs = ctx.deps.finalTimeoutMs ?? FINAL_TIMEOUT_MS;
  const work = new AbortController();
  const onGone = () => work.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onGone, { once: true });
  const deadlineAt = job.committedAt + timeoutMs;
  const deadline = setTimeout(() => work.abort(new ItemTimeout(timeoutMs)), Math.max(0, deadlineAt - performance.now()));
  try {
    await deliverWithin(ctx, job, { signal: work.signal, deadlineAt });
  } finally {
    clearTimeout(deadline);
    ctx.signal.removeEventListener('abort', onGone);
    // Whether or not its final ran (a hold can fail first), the item's recogniser is done with the session.
    job.transcriber.cancel();
  }
}

async function deliverWithin(ctx: DeliveryContext, job: CommittedItem, limits: FinalLimits): Promise<void> {
  const { signal } = limits;
  const translator = job.target ? ctx.deps.translator : null;
  const billing = new ItemBilling(ctx.deps.ledger, ctx.deps.charge, job.model.id, translator?.id ?? null, job.samples.length / 16_000);
  try {
    await billing.hold();
  } catch (err) {
    if (err instanceof InsufficientQuotaError) return ctx.fatal('insufficient_quota', err.message);
    return failItem(ctx, job.itemId, err);
  }
  try {
    const transcript = await job.transcriber.final(job.samples, job.speechSamples === undefined ? limits : { ...limits, speechSamples: job.speechSamples });
    let translation: { language: string; text: string; characters: number } | undefined;
    let quotaLeft = true;
    if (translator && job.target) {
      try {
        await billing.holdTranslation(transcript);
      } catch (err) {
        if (!(err instanceof InsufficientQuotaError)) throw err;
        quotaLeft = false; // the transcript is delivered and billed; the session ends after it
      }
      if (quotaLeft) {
        const result = transcript
          ? await translator.engine.run<{ translations: string[] }>('translate', { texts: [transcript], source: 'bam_Latn', target: job.target }, signal, {
              account: ctx.deps.charge.accountId,
            })
          : { translations: [''] };
        translation = { language: job.target, text: result.translations[0] ?? '', characters: billing.translatedCharacters };
      }
    }
    if (ctx.signal.aborted) return await billing.release();
    // Silence is never billed: an idle-timeout item in which the model heard nothing is free. One with words
    // (speech under the session's threshold) is charged like any item, so the threshold cannot make speech free.
    const free = job.idle === true && !transcript.trim();
    ctx.emit({ type: 'completed', itemId: job.itemId, transcript, seconds: free ? 0 : billing.seconds, ...(translation ? { translation } : {}) });
    if (job.stoppedAt !== undefined) ctx.deps.observer?.turnCompleted((performance.now() - job.stoppedAt) / 1000);
    const delivered = ctx.deps.delivered ? await ctx.deps.delivered() : true;
    if (free || !delivered) await billing.release();
    else await settleDelivered(ctx, billing, translation !== undefined, job.itemId);
    if (!quotaLeft) ctx.fatal('insufficient_quota', new InsufficientQuotaError(ctx.deps.charge.accountId, 0, 0).message);
  } catch (err) {
    await billing.release();
    // The key was revoked before this item's charge landed (by another process, not yet swept): the item is
    // neither charged nor delivered, and the session ends.
    if (err instanceof KeyRevokedError) return ctx.fatal('key_revoked', KEY_REVOKED_MESSAGE);
    failItem(ctx, job.itemId, signal.reason instanceof ItemTimeout ? signal.reason : err);
  }
}

export const KEY_REVOKED_MESSAGE = 'The API key of this session has been revoked: the session is closed, and nothing after the revocation is charged.';

/**
 * The charge of an item whose `completed` event was delivered. A key revoked meanwhile (by another process,
 * not yet swept) refuses the charge: the item stays free and the session ends. Any other store failure here
 * is logged, never turned into a `failed` for a transcript the client has.
 */
async function settleDelivered(ctx: DeliveryContext, billing: ItemBilling, translated: boolean, itemId: string): Promise<void> {
  try {
    await billing.settle(translated);
  } catch (err) {
    if (err instanceof KeyRevokedError) {
      await billing.release();
      return ctx.fatal('key_revoked', KEY_REVOKED_MESSAGE);
    }
    ctx.deps.logger?.error(
      { requestId: ctx.deps.charge.requestId, itemId, err: (err as Error).message },
      'recording realtime item usage failed: delivered, not charged',
    );
  }
}

function failItem(ctx: DeliveryContext, itemId: string, err: unknown): void {
  if (ctx.signal.aborted) return;
  const error =
    err instanceof ItemTimeout
      ? { code: 'transcription_timeout', message: err.message }
      : err instanceof EngineOverloadedError
        ? { code: 'service_unavailable', message: `The model ${err.modelId} is at capacity; this item was not transcribed.` }
        : { code: 'server_error', message: 'The transcription of this item failed.' };
  ctx.deps.observer?.itemFailed?.(error.code);
  ctx.emit({ type: 'failed', itemId, error });
}
