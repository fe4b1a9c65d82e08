/**
 * How much text a voice takes, for every surface that speaks streamed text (the speech sockets, a call's
 * replies): one piece of at most MAX_MESSAGE_CHARACTERS, and at most MAX_PENDING_CHARACTERS received and
 * not yet synthesized (several minutes of speech). Text beyond either is refused whole — nothing of it is
 * kept, spoken or held — and may be sent again once more audio has gone out. Without the second bound, a
 * client that writes faster than speech would grow the server's memory and the hold without end.
 *
 * The errors are the voice's own; the API maps them (api/errors.ts), a call words them for its app.
 */

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
