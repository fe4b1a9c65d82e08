/**
 * The bilingual bridge's return path: an app that speaks French or English sends its reply as tokens
 * (word by word, as an LLM writes it); the caller must hear Bambara. Tokens are gathered into sentences —
 * a sentence is released once its end mark (. ! ? …) is followed by more text, or at the cycle's `last`
 * token — and each sentence is translated (banjugu-1) once it is released and the one before it is translated,
 * and handed on in order, so the voice starts on the first sentence while the next one translates.
 *
 * Billing: each sentence's characters at the translation price, held before the model runs and settled when
 * the translation is handed on; a sentence dropped by an interruption or the call's end is released.
 */
import type { ChargeContext, Ledger, Reservation } from '../../billing/ledger.js';
import { billableCharacters } from '../../billing/metering.js';
import type { PhraseEngine } from '../../voice/phrase-synthesis.js';

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
  /** Settles when the last released sentence's translation has (the next one starts then). */
  private translating: Promise<void> = Promise.resolve();
  private generation = 0;
  /** A sentence of the current reply has been handed on: the next one is joined to it by a space. */
  private midReply = false;
  /** Aborts the translations of the reply under way (an interruption), and those of the call with it. */
  private cycle = new AbortController();

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
    const text = sentence.trim();
    // A sentence starts translating as soon as the one before it is translated (not once it has been spoken,
    // nor at once: two generations at a time take their decoder steps in turn, which doubled the first
    // sentence's time in bench:telephony --bridge, and the first sentence is what the caller waits for).
    // An interruption aborts it (`reset`), and its failure then is not an error: nobody is waiting for it.
    const cycle = this.cycle.signal;
    const work = this.translating.then(() => (text && !cycle.aborted ? this.translate(text, cycle) : null));
    this.translating = work.then(
      () => undefined,
      () => undefined,
    );
    work.catch(() => {}); // handled when the chain reaches it; not an unhandled rejection before that
    this.chain = this.chain
      .then(() =>
        work.then(
          (done) => this.handOn(done, text, last, generation),
          (err) => (this.stale(generation) ? undefined : Promise.reject(err)),
        ),
      )
      .catch((err) => this.onError(err));
  }

  private stale(generation: number): boolean {
    return this.signal.aborted || generation !== this.generation;
  }

  /** Drops what is waiting (an interruption): sentences not yet translated are not. */
  reset(): void {
    this.cycle.abort();
    this.cycle = new AbortController();
    this.pending = '';
    this.midReply = false;
    this.generation++;
  }

  /** Resolves once every released sentence has been handed on (or dropped). */
  settled(): Promise<void> {
    return this.chain;
  }

  /** Holds the sentence's price and translates it; the hold is settled or released by `handOn`. */
  private async translate(text: string, cycle: AbortSignal): Promise<{ translated: string; characters: number; reservation: Reservation }> {
    const { ledger, charge, engine, source } = this.deps;
    const characters = billableCharacters(text);
    const reservation = await ledger.reserve(charge, ledger.costOf(characters, ledger.priceOf('character', 'translation')));
    try {
      const result = await engine.run<{ translations: string[] }>(
        'translate',
        { texts: [text], source, target: 'bam_Latn' },
        AbortSignal.any([this.signal, cycle]),
        { account: charge.accountId, priority: 'opening' },
      );
      return { translated: (result.translations[0] ?? '').trim(), characters, reservation };
    } catch (err) {
      await reservation.release();
      throw err;
    }
  }

  private async handOn(done: Awaited<ReturnType<ReplyTranslator['translate']>> | null, text: string, last: boolean, generation: number): Promise<void> {
    // Interrupted (or the call ended) since it was released: nobody will hear it, so it is not charged.
    if (this.stale(generation)) return void (await done?.reservation.release());
    if (!done) {
      if (last) {
        this.midReply = false;
        await this.onPiece({ original: '', text: '', last, characters: 0 });
      }
      return;
    }
    await done.reservation.settle([{ model: this.deps.model, kind: 'translation', unit: 'character', quantity: done.characters }]);
    // Sentences of one reply are joined by a space (the app's own separator went with the sentence it ended).
    const joined = this.midReply && done.translated ? ` ${done.translated}` : done.translated;
    this.midReply = !last;
    await this.onPiece({ original: text, text: joined, last, characters: done.characters });
  }
}
