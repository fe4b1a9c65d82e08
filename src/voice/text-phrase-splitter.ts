/**
 * Text that arrives in pieces (an LLM's answer, word by word) → the phrases a voice speaks, released as
 * soon as each is certain. The phrases are exactly those the REST speech path plans for the whole text
 * (text-chunker.ts `chunkText`): wherever the pieces are cut — mid-word, mid-space, one character at a
 * time — the same phrases come out, with the same character counts, so the audio and the bill do not depend
 * on how the client happened to split its text.
 *
 * A phrase is certain once chunkText would cut after it whatever text follows: chunkText only ever cuts
 * while taking a word, looking at that word and the ones before, so the phrases before the last one of the
 * complete words received (those followed by whitespace) are final. The last phrase is final early when it
 * ends a sentence and the next word has begun with something other than closing quotes (`wa? »` stays one
 * phrase, `wa? A` cuts). `flush()` releases everything, as the end of a text: what follows is a new
 * text, whose first phrase is short again (the first-audio rule of text-chunker.ts).
 *
 * Cost: each push re-chunks only the text not yet released, which chunkText keeps under about one phrase
 * (≤ 200 characters) plus one unfinished word; the released phrases' length is passed along, as the next
 * phrases' limit grows with it.
 */
import { chunkText, endsSentence, isClosersOnly, normalizeText, type TextChunk } from '../engines/tts/text-chunker.js';

export type { TextChunk };

export class TextPhraseSplitter {
  /** Received and not yet released. Starts at a word (released phrases carry their trailing whitespace). */
  private pending = '';
  /** Code points of the current text's released phrases: the limit of the next ones grows with them. */
  private spokenBefore = 0;

  /** Adds a piece of text; returns the phrases it completed, in order (often none). */
  push(piece: string): TextChunk[] {
    this.pending += piece;
    const end = endOfCompleteWords(this.pending);
    if (end === 0) return [];
    const chunks = chunkText(this.pending.slice(0, end), this.options());
    const partial = normalizeText(this.pending.slice(end));
    const last = chunks[chunks.length - 1];
    // isClosersOnly('') is true: with no next word begun, the last phrase may still grow.
    const lastIsFinal = last !== undefined && !isClosersOnly(partial) && endsSentence(last.text);
    return this.release(lastIsFinal ? chunks : chunks.slice(0, -1));
  }

  /** Releases all pending text as the last phrases of the current text (none when it has nothing but whitespace). */
  flush(): TextChunk[] {
    const chunks = chunkText(this.pending, this.options());
    // Whitespace alone makes no phrase; it is dropped with the text it trailed (nothing is spoken or charged for it).
    this.pending = '';
    this.spokenBefore = 0;
    return chunks;
  }

  /** Characters (code points) received and not yet released as phrases. */
  get pendingCharacters(): number {
    return codePointCount(this.pending);
  }

  private options() {
    return { spokenBefore: this.spokenBefore };
  }

  private release(chunks: TextChunk[]): TextChunk[] {
    if (!chunks.length) return chunks;
    const released = chunks.reduce((n, c) => n + c.characters, 0);
    this.pending = this.pending.slice(codeUnitIndex(this.pending, released));
    for (const chunk of chunks) this.spokenBefore += codePointCount(chunk.text);
    return chunks;
  }
}

/** Index just past the last whitespace character: the text before it is whole words. 0 when there is none. */
function endOfCompleteWords(text: string): number {
  for (let i = text.length - 1; i >= 0; i--) if (/\s/u.test(text[i]!)) return i + 1;
  return 0;
}

function codePointCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** The code-unit index of the `count`-th code point (chunk character counts are code points). */
function codeUnitIndex(text: string, count: number): number {
  let index = 0;
  let seen = 0;
  for (const c of text) {
    if (seen === count) break;
    index += c.length;
    seen++;
  }
  return index;
}
