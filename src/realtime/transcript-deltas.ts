/**
 * Append-only transcript deltas. A turn is re-decoded while it is spoken; each hypothesis may still change
 * its last word (the audio may end inside it), so only the words before the last are "decided", and a
 * delta goes out only when the decided words extend what was already sent. The final decode sends the
 * rest. The deltas of a turn concatenate to its final transcript unless the final decode revised a word
 * already sent (then nothing more is sent, and `completed` carries the final transcript, which is the truth).
 */
export class TranscriptDeltas {
  private sent: string[] = [];

  /** The delta an interim hypothesis allows ('' = nothing new). */
  interim(hypothesis: string): string {
    const words = splitWords(hypothesis);
    return this.extend(words.slice(0, -1));
  }

  /** The delta that completes the turn with its final transcript ('' = nothing left to send). */
  final(transcript: string): string {
    return this.extend(splitWords(transcript));
  }

  /** The text sent so far (the deltas joined). */
  get text(): string {
    return this.sent.join(' ');
  }

  private extend(words: string[]): string {
    if (words.length <= this.sent.length) return '';
    for (let i = 0; i < this.sent.length; i++) if (words[i] !== this.sent[i]) return '';
    const added = words.slice(this.sent.length);
    const delta = (this.sent.length ? ' ' : '') + added.join(' ');
    this.sent = words;
    return delta;
  }
}

export function splitWords(text: string): string[] {
  const trimmed = text.trim();
  return trimmed ? trimmed.split(/\s+/) : [];
}

/** A transcript normalised the way deltas carry it: words separated by one space. */
export function normalizeTranscript(text: string): string {
  return splitWords(text).join(' ');
}
