/**
 * One text translated, paid for: the translation path behind POST /chat/completions and the native
 * POST /v1/models/translate, so both surfaces share the engine, the hold, the price and the ledger rows.
 * Billed per character of input; `djelia-translate-v2` is billed (and reports) in tokens. The most the
 * request can cost is held before the model runs, and settled once the answer carrying the translation
 * has been delivered (the result's onDelivered, charge-on-delivery.ts); a failure releases the hold and
 * nothing is charged.
 */
import { billableCharacters } from '../../billing/metering.js';
import { maxTranslateTokens } from '../../engines/mt/translate-token-bound.js';
import type { CatalogModel } from '../model-catalog.js';
import type { ApiRequest } from '../types.js';
import type { Caller } from '../../auth/caller.js';
import type { CompatDeps } from './deps.js';
import { engineFor } from './model-resolution.js';
import { chargeOnDelivery } from '../charge-on-delivery.js';

export interface TranslationUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface TextTranslation {
  model: CatalogModel;
  text: string;
  source: string;
  target: string;
}

export interface TranslatedText {
  translation: string;
  usage: TranslationUsage;
  /** The result's onDelivered: settles the charge once the answer was delivered, releases it otherwise. */
  onDelivered: (delivered: boolean) => Promise<void>;
}

/** Translates `job.text`; the caller must put `onDelivered` on its result (the reservation waits for it). */
export async function translateOnce(deps: CompatDeps, req: ApiRequest, caller: Caller, job: TextTranslation): Promise<TranslatedText> {
  const { model, text } = job;
  const engine = engineFor(deps.engines, model);
  const byToken = model.id === `${deps.vendor}-translate-v2`;
  const characters = billableCharacters(text);
  const ctx = { requestId: req.requestId, accountId: caller.account.id, keyId: caller.key.id };
  // Before any work, the most this request can cost is held: its characters (exact), or for the token-billed
  // model the most tokens the engine can read and write for this text (translate-token-bound.ts).
  const bound = byToken ? maxTranslateTokens(text, engine.info) : characters;
  const reservation = await deps.ledger.reserve(ctx, deps.ledger.costOf(bound, deps.ledger.priceOf(byToken ? 'token' : 'character', 'translation')));
  try {
    const result = await engine.run<{ translations: string[]; inputTokens: number; outputTokens: number }>(
      'translate',
      { texts: [text], source: job.source, target: job.target },
      req.signal,
      { account: caller.account.id },
    );
    const usage = byToken
      ? { prompt_tokens: result.inputTokens, completion_tokens: result.outputTokens, total_tokens: result.inputTokens + result.outputTokens }
      : { prompt_tokens: characters, completion_tokens: 0, total_tokens: characters };
    const items = [{ model: model.id, kind: 'translation', unit: byToken ? 'token' : 'character', quantity: usage.total_tokens }] as const;
    return {
      translation: result.translations[0] ?? '',
      usage,
      onDelivered: chargeOnDelivery(reservation, () => items, { logger: deps.logger, requestId: req.requestId }),
    };
  } catch (err) {
    await reservation.release(); // on failure the hold goes and nothing is charged
    throw err;
  }
}
