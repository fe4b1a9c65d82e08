/**
 * The bilingual bridge's return path: an app that speaks French or English sends its reply as tokens
 * (word by word, as an LLM writes it); the caller must hear Bambara. Tokens are gathered into sentences —
 * a sentence is released once its end mark (. ! ? …) is followed by more text, or at the cycle's `last`
 * token — and each sentence is translated (banjugu-1) and handed on in order, so the voice can start on the
 * first sentence while the app is still writing the next.
 *
 * Billing: each sentence's characters at the translation price, held before the model runs and settled when
 * the translation is handed on; a sentence dropped by an interruption or the call's end is released.
 */
import type { ChargeContext, Ledger } from '../../billing/ledger.js';
import { billableCharacters } from '../../billing/metering.js';
import type { PhraseEngine } from '../../pipeline/phrase-synthesis.js';

/** A sentence end, then whitespace: everything up to it is a sentence that will not change. */
const SENTENCE_END = /[.!?…]+["»”')\]]*\s+/g;

export interface TranslatedPiece {
  /** The app's text (French or English) and its Bambara translation. */
  original: string;
  text: string;
  /** This piece ends the app's talk cycle. */
  last: boolean;
  characters: number;
}

export interface ReplyTranslatorDeps {
  engine: PhraseEngine;
  model: string;
  source: 'fra_Latn' | 'eng_Latn';
  ledger: Ledger;
  charge: ChargeContext;
}

export class ReplyTranslator {
  private pending = '';
  private chain: Promise<void> = Promise.resolve();
  private generation = 0;
  /** A sentence of the current reply has been handed on: the next one is joined to it by a space. */
  private midReply = false;

  constructor(
    private readonly deps: ReplyTranslatorDeps,
    private readonly signal: AbortSignal,
    /** Receives each translated piece, in order; errors reject `settled()`. */
    private readonly onPiece: (piece: TranslatedPiece) => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  push(token: string, last: boolean): void {
    this.pending += token;
    // Every sentence end followed by more text releases the sentence before it; `last` releases the rest.
    let from = 0;
    for (const match of this.pending.matchAll(SENTENCE_END)) {
      const cut = match.index + match[0].length;
      this.release(this.pending.slice(from, cut), false);
      from = cut;
    }
    const rest = this.pending.slice(from);
    this.pending = last ? '' : rest;
    if (last) this.release(rest, true);
  }

  private release(sentence: string, last: boolean): void {
    const generation = this.generation;
    this.chain = this.chain.then(() => (generation === this.generation ? this.translate(sentence, last, generation) : undefined)).catch((err) => this.onError(err));
  }

  /** Drops what is waiting (an interruption): sentences not yet translated are not. */
  reset(): void {
    this.pending = '';
    this.midReply = false;
    this.generation++;
  }

  /** Resolves once every released sentence has been handed on (or dropped). */
  settled(): Promise<void> {
    return this.chain;
  }

  private async translate(sentence: string, last: boolean, generation: number): Promise<void> {
    const text = sentence.trim();
    if (!text) {
      if (last) {
        this.midReply = false;
        await this.onPiece({ original: '', text: '', last, characters: 0 });
      }
      return;
    }
    const { ledger, charge, engine, model, source } = this.deps;
    const characters = billableCharacters(text);
    const reservation = await ledger.reserve(charge, ledger.costOf(characters, ledger.priceOf('character', 'translation')));
    try {
      const result = await engine.run<{ translations: string[] }>('translate', { texts: [text], source, target: 'bam_Latn' }, this.signal, { account: charge.accountId, priority: 'opening' });
      // Interrupted (or the call ended) while it ran: nobody will hear it, so it is not charged.
      if (this.signal.aborted || generation !== this.generation) return await reservation.release();
      await reservation.settle([{ model, kind: 'translation', unit: 'character', quantity: characters }]);
      // Sentences of one reply are joined by a space (the app's own separator went with the sentence it ended).
      const translated = (result.translations[0] ?? '').trim();
      const joined = this.midReply && translated ? ` ${translated}` : translated;
      this.midReply = !last;
      await this.onPiece({ original: text, text: joined, last, characters });
    } catch (err) {
      await reservation.release();
      throw err;
    }
  }
}
