/**
 * The phrases a voice speaks for a text, planned before any synthesis (pure TS, so the main thread can plan
 * a speech request and run one short engine job per phrase, and the VITS runner's whole-text `synthesize`
 * plans the same way): text-chunker.ts cuts the text into phrases, speech-text.ts gives each its spoken form
 * over the voice's alphabet. A phrase with nothing to say (punctuation only) is not synthesized: its
 * characters are charged to the spoken phrase before it (or, at the start, the first spoken one), so the
 * characters of the plan still add up to the input's. Every phrase but the last ends with the voice's word
 * boundary (`boundaryAfter`), so the joined audio reads as one text.
 */
import { speechText } from './speech-text.js';
import { chunkText } from './text-chunker.js';

export interface PlannedPhrase {
  /** The phrase's normalised text. */
  text: string;
  /** What the voice says for it (speech-text.ts). */
  spoken: string;
  /** Input characters (code points) this phrase is charged for. */
  characters: number;
  /** Speak the word boundary after it: true for every phrase but the last. */
  boundaryAfter: boolean;
}

/** A text with characters the voice cannot say, or nothing to say; the API answers 400 before it gets here. */
export class UnspeakableTextError extends Error {
  constructor(readonly characters: string[]) {
    super(
      characters.length
        ? `The text has characters this voice cannot pronounce: ${characters.map((c) => JSON.stringify(c)).join(', ')}`
        : 'The text has nothing this voice can pronounce',
    );
    this.name = 'UnspeakableTextError';
  }
}

/**
 * Plans `text` for a voice whose alphabet is `speakable`; with no alphabet (a runner that does not report
 * one), each phrase is spoken as its normalised text. Throws UnspeakableTextError when the voice cannot say
 * the text, or nothing of it.
 */
export function planPhrases(text: string, speakable: ReadonlySet<string> | null): PlannedPhrase[] {
  if (speakable) {
    const { unspeakable } = speechText(text, speakable);
    if (unspeakable.length) throw new UnspeakableTextError(unspeakable);
  }
  const planned: PlannedPhrase[] = [];
  let carried = 0;
  for (const chunk of chunkText(text)) {
    const spoken = speakable ? speechText(chunk.text, speakable).text : chunk.text;
    if (!spoken) {
      if (planned.length) planned[planned.length - 1]!.characters += chunk.characters;
      else carried += chunk.characters;
      continue;
    }
    planned.push({ text: chunk.text, spoken, characters: chunk.characters + carried, boundaryAfter: true });
    carried = 0;
  }
  if (!planned.length) throw new UnspeakableTextError([]);
  planned[planned.length - 1]!.boundaryAfter = false;
  return planned;
}
