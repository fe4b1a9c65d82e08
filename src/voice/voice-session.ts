/**
 * A voice: the utterances spoken with one setup (the model, its voice and output, whom to charge) that share
 * one text limit and one lifecycle — a speech socket's context, or a call's voice, whose talk cycles are
 * its utterances, spoken one after another.
 *
 * - Limits: a piece of text is admitted only if it fits MAX_MESSAGE_CHARACTERS and, with what every open
 *   utterance still has to synthesize, MAX_PENDING_CHARACTERS (several minutes of speech). Text beyond
 *   either is refused whole — nothing of it is kept, spoken or held — and may be sent again once more audio
 *   has gone out. Without the second bound, a client that writes faster than speech would grow the server's
 *   memory and the hold without end. The errors are the voice's own; the API maps them (api/errors.ts), a
 *   call words them for its app.
 * - Utterances (utterance.ts) are opened here and leave the voice when they close.
 * - `close(reason)` ends the voice: every utterance stops now and settles what it delivered; no more open.
 */
import { SessionLifecycle, type Session } from '../primitives/session-lifecycle.js';
import { Utterance, type UtteranceEvents, type VoiceSetup } from './utterance.js';

/** Longest text of one piece (a socket message, an app's `text` token), in characters. */
export const MAX_MESSAGE_CHARACTERS = 10_000;
/** Text received and not yet synthesized, in characters (several minutes of speech): more is refused until audio catches up. */
export const MAX_PENDING_CHARACTERS = 5_000;

/** A piece of text the voice refuses whole. */
export abstract class SpeechLimitError extends Error {
  constructor(
    message: string,
    /** The piece's length in characters. */
    readonly characters: number,
    /** Characters already waiting to be spoken. */
    readonly waiting: number,
  ) {
    super(message);
  }
}

/** One piece longer than MAX_MESSAGE_CHARACTERS. */
export class TextTooLongError extends SpeechLimitError {
  readonly limit = MAX_MESSAGE_CHARACTERS;

  constructor(characters: number, waiting: number) {
    super(`The text has ${characters} characters; at most ${MAX_MESSAGE_CHARACTERS} are taken at once.`, characters, waiting);
    this.name = 'TextTooLongError';
  }
}

/** The piece would make more than MAX_PENDING_CHARACTERS wait to be spoken. */
export class TooMuchTextWaitingError extends SpeechLimitError {
  readonly limit = MAX_PENDING_CHARACTERS;

  constructor(characters: number, waiting: number) {
    super(`${waiting} characters are waiting to be spoken and at most ${MAX_PENDING_CHARACTERS} may wait.`, characters, waiting);
    this.name = 'TooMuchTextWaitingError';
  }
}

/** Throws the SpeechLimitError that refuses `text` when `waiting` characters already wait to be spoken. */
export function checkTextLimits(text: string, waiting: number): void {
  const characters = [...text].length;
  if (characters > MAX_MESSAGE_CHARACTERS) throw new TextTooLongError(characters, waiting);
  if (waiting + characters > MAX_PENDING_CHARACTERS) throw new TooMuchTextWaitingError(characters, waiting);
}

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
