/**
 * A voice: the utterances spoken with one setup (the model, its voice and output, whom to charge) that share
 * one text limit and one lifecycle — a speech socket's context, or a call's voice, whose talk cycles are
 * its utterances, spoken one after another.
 *
 * - Limits (voice-limits.ts): a piece of text is admitted only if it fits MAX_MESSAGE_CHARACTERS and, with
 *   what every open utterance still has to synthesize, MAX_PENDING_CHARACTERS.
 * - Utterances (utterance.ts) are opened here and leave the voice when they close.
 * - `close(reason)` ends the voice: every utterance stops now and settles what it delivered; no more open.
 */
import { SessionLifecycle, type Session } from '../primitives/session-lifecycle.js';
import { Utterance, type UtteranceEvents, type VoiceSetup } from './utterance.js';
import { checkTextLimits } from './voice-limits.js';

export class VoiceSession implements Session {
  private readonly lifecycle = new SessionLifecycle();
  private readonly utterances = new Set<Utterance>();

  constructor(readonly setup: VoiceSetup) {}

  get closed(): boolean {
    return this.lifecycle.closed;
  }

  get signal(): AbortSignal {
    return this.lifecycle.signal;
  }

  /** Characters received by the open utterances and not yet synthesized. */
  get waitingCharacters(): number {
    let n = 0;
    for (const utterance of this.utterances) if (!utterance.closed) n += utterance.waitingCharacters;
    return n;
  }

  /** Throws the SpeechLimitError that refuses `text` whole (nothing of it is kept), or returns. */
  admit(text: string): void {
    checkTextLimits(text, this.waitingCharacters);
  }

  /** A new utterance of this voice; it leaves the voice once it has closed and settled. */
  open(events: UtteranceEvents = {}): Utterance {
    this.lifecycle.throwIfClosed();
    const utterance = new Utterance(this.setup, events);
    this.utterances.add(utterance);
    // close() is idempotent: this is the settlement of whichever close came first.
    const leave = () => void utterance.close('closed').finally(() => this.utterances.delete(utterance));
    utterance.signal.addEventListener('abort', leave, { once: true });
    return utterance;
  }

  /** Ends the voice: every utterance stops now; resolves once each has charged what it delivered. Idempotent. */
  async close(reason: string): Promise<void> {
    this.lifecycle.close(reason);
    await Promise.all([...this.utterances].map((utterance) => utterance.close(reason)));
  }
}
