/**
 * Words from a CTC path that grows piece by piece (frames-walk.ts): each piece's frames become tokens, and
 * the words they make are given out as soon as they cannot change — every word but the last, which the next
 * piece may continue. Joined, the words equal what tokensToWords gives for the whole path at once: a word
 * starts afresh after a delimiter or a long pause, so re-reading the tokens from the last word's first one
 * decides the same boundaries.
 */
import { tokensFromIds, tokensToWords, type CtcToken, type Timing, type Word } from './ctc-decode.js';
import type { PathPiece } from './frames-walk.js';

export class PathWords {
  /** Tokens from the first one of the word still open. */
  private tail: CtcToken[] = [];
  private lastId = -1;
  private lastFrame = -2;

  constructor(
    private readonly pieces: readonly string[],
    private readonly timing: Omit<Timing, 'offsetSeconds'>,
    private readonly wordBreakSeconds: number,
  ) {}

  /** Adds a piece of the path; returns the words it closes. */
  push(piece: PathPiece): Word[] {
    const tokens = tokensFromIds(piece.ids, piece.blank, piece.firstFrame);
    // A run of one class across the pieces' join is one token (the frames are contiguous).
    const first = tokens[0];
    const joined = this.tail.at(-1);
    if (
      first &&
      joined &&
      first.id === this.lastId &&
      first.startFrame === piece.firstFrame &&
      this.lastFrame === piece.firstFrame - 1 &&
      joined.endFrame === this.lastFrame
    ) {
      joined.endFrame = first.endFrame;
      tokens.shift();
    }
    this.tail.push(...tokens);
    if (piece.ids.length) {
      this.lastId = piece.ids[piece.ids.length - 1]!;
      this.lastFrame = piece.firstFrame + piece.ids.length - 1;
    }
    const words = this.words();
    if (words.length <= 1) return [];
    // Keep the tokens of the last word (it may go on); those before it are done.
    const lastStart = words.at(-1)!.start;
    const keepFrom = this.tail.findIndex((t) => this.start(t) >= lastStart - 1e-9 && (this.pieces[t.id] ?? '').trim() !== '');
    this.tail = keepFrom >= 0 ? this.tail.slice(keepFrom) : [];
    return words.slice(0, -1);
  }

  /** The words left at the end of the audio. */
  flush(): Word[] {
    const words = this.words();
    this.tail = [];
    return words;
  }

  private words(): Word[] {
    return tokensToWords(this.tail, this.pieces, { ...this.timing, offsetSeconds: 0 }, this.wordBreakSeconds);
  }

  private start(token: CtcToken): number {
    return Math.round(token.startFrame * this.timing.frameSeconds * 1000) / 1000;
  }
}
