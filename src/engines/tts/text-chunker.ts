/**
 * Text preparation for speech synthesis: normalisation (Unicode NFC, whitespace collapsed, trimmed; all
 * letters kept, Bambara's ɛ ɔ ɲ ŋ included) and chunking into sentences, then phrases, so a TTS engine can
 * synthesize and stream one chunk at a time. The first chunk is kept short (≤ 20 characters by default)
 * so the first audio comes quickly; later chunks may be longer, up to twice the text before them and ≤ 200
 * (so each is synthesized before the audio before it has played). Chunks end at sentence punctuation,
 * else at phrase punctuation, else between words, never inside a word (a single word longer than the limit
 * becomes a chunk of its own) — except a "word" longer than the later limit (200), which is cut into pieces of
 * that length: no language has such words, and one synthesis run over thousands of characters would take
 * memory and time in proportion (a 5,000-letter "word" is a few minutes of audio in one model run).
 *
 * Each chunk reports how many characters of the ORIGINAL input it covers (Unicode code points, whitespace
 * included), and the counts add up to the input's length, so billing can count exactly what was spoken.
 */

export interface TextChunk {
  /** Normalised text of the chunk. */
  text: string;
  /** Code points of the original input covered by this chunk (the whitespace around it included). */
  characters: number;
}

export interface ChunkOptions {
  /** Longest first chunk, in code points of normalised text (unless one word is longer). */
  firstMaxLength?: number;
  /** Longest later chunk. */
  maxLength?: number;
  /**
   * Code points of normalised text already chunked before `input` in the same text (a stream's released
   * phrases): later chunks' limit grows with what comes before them (PHRASE_GROWTH).
   */
  spokenBefore?: number;
}

/**
 * The first chunk's synthesis is the floor of every request's time to first audio, and in a burst it adds up
 * across the queue: 50 simultaneous requests on 2 replicas wait for 25 first phrases each. With 40, the
 * bench:tts text's first phrase was its whole first sentence (22 characters, 3.2 s of audio); with 20 it is
 * its first clause (8 characters), and the ×50 μ-law burst's TTFB p99 fell from 71 to 47 ms (mean of 12
 * bursts each). 20 characters is still 3–4 words, cut at a comma where there is one.
 */
export const FIRST_CHUNK_MAX = 20;
export const CHUNK_MAX = 200;
/**
 * A later chunk is at most this many times as long as all the text before it. A VITS model cannot stream
 * inside a phrase: a listener hears phrase n + 1 only once it is synthesized, so it must be ready before
 * the audio of the phrases before it has played. At real size (MMS-TTS, 36 M parameters) one core
 * synthesizes ≈ 2.3 s of audio per second; with one sentence of 67 characters after two short ones, the
 * bench:tts-socket text's audio ran ≈ 1 s behind real-time playback at one client. Growing by at most 2×
 * keeps each phrase's synthesis under the audio before it, and phrases still end at punctuation where
 * there is some.
 */
export const PHRASE_GROWTH = 2;

const SENTENCE_END = /[.!?…。！？]/u;
const PHRASE_END = /[,;:،，；：]/u;
/** Closing quotes and brackets may follow the punctuation that ends a sentence: `wa?"` */
const TRAILING_CLOSERS = /[\p{Pe}\p{Pf}"'»”’]+$/u;

/**
 * NFC (so "e" + combining accent and "é" count and match alike), Greek small epsilon — a common stand-in
 * for Latin ɛ on keyboards without it — mapped to ɛ, whitespace runs collapsed to one space, trimmed.
 */
export function normalizeText(text: string): string {
  return text
    .normalize('NFC')
    .replace(/\u03b5/g, '\u025b')
    .replace(/\s+/gu, ' ')
    .trim();
}

interface Word {
  /** Normalised word (no whitespace). */
  text: string;
  /** Code points of the original input it covers (its trailing whitespace included). */
  characters: number;
  boundary: 'sentence' | 'phrase' | null;
}

const codePoints = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/** Whether a (normalised) word is closing quotes or brackets only, such as `»` or `")`. */
export const isClosersOnly = (word: string) => word.replace(TRAILING_CLOSERS, '') === '';

function boundaryOf(word: string): Word['boundary'] {
  const core = word.replace(TRAILING_CLOSERS, '');
  const last = [...core].pop() ?? '';
  if (SENTENCE_END.test(last)) return 'sentence';
  if (PHRASE_END.test(last)) return 'phrase';
  return null;
}

/**
 * Whether chunkText, having taken every word of `chunk` (a chunk's normalised text), would cut before the
 * next word unless that word is closing quotes or brackets only: its last word that is not only closers
 * ends a sentence. A streaming caller uses it to release a finished sentence before the next word is whole.
 */
export function endsSentence(chunk: string): boolean {
  const words = chunk.split(' ');
  while (words.length && isClosersOnly(words[words.length - 1]!)) words.pop();
  // A chunk of closers alone: unknown without the words before it, so not released early.
  return words.length > 0 && boundaryOf(words[words.length - 1]!) === 'sentence';
}

/** Splits at whitespace; leading whitespace is charged to the first word, trailing to each word. */
function splitWords(input: string, longestWord: number): Word[] {
  const words: Word[] = [];
  const re = /(\s*)(\S+)(\s*)/gu;
  let match: RegExpExecArray | null;
  while ((match = re.exec(input))) {
    const [, lead = '', raw = '', trail = ''] = match;
    const pieces = cutLongWord(raw, longestWord);
    pieces.forEach((piece, i) => {
      const text = normalizeText(piece);
      const characters = (i === 0 ? codePoints(lead) : 0) + codePoints(piece) + (i === pieces.length - 1 ? codePoints(trail) : 0);
      words.push({ text, characters, boundary: i === pieces.length - 1 ? boundaryOf(text) : null });
    });
  }
  return words;
}

/** `raw` in pieces of at most `longest` code points, never starting a piece with a combining mark. */
function cutLongWord(raw: string, longest: number): string[] {
  const points = [...raw];
  if (points.length <= longest) return [raw];
  const pieces: string[] = [];
  for (let from = 0; from < points.length;) {
    let to = Math.min(points.length, from + longest);
    while (to < points.length && to > from + 1 && /\p{M}/u.test(points[to]!)) to--;
    pieces.push(points.slice(from, to).join(''));
    from = to;
  }
  return pieces;
}

const lengthOf = (words: Word[]) => words.reduce((n, w) => n + codePoints(w.text), Math.max(0, words.length - 1));

function toChunk(words: Word[]): TextChunk {
  return { text: words.map((w) => w.text).join(' '), characters: words.reduce((n, w) => n + w.characters, 0) };
}

export function chunkText(input: string, options: ChunkOptions = {}): TextChunk[] {
  const firstMax = options.firstMaxLength ?? FIRST_CHUNK_MAX;
  const laterMax = options.maxLength ?? CHUNK_MAX;
  const words = splitWords(input, laterMax);
  const chunks: TextChunk[] = [];
  let current: Word[] = [];
  let before = options.spokenBefore ?? 0;
  const limit = () => (before === 0 ? firstMax : Math.min(laterMax, Math.max(firstMax, PHRASE_GROWTH * before)));
  const emit = (taken: Word[]) => {
    if (!taken.length) return;
    const chunk = toChunk(taken);
    chunks.push(chunk);
    before += codePoints(chunk.text);
  };

  let sentenceEnded = false;
  for (const word of words) {
    // A sentence ends after its closing quotes, even when they stand apart: `wa? »`.
    if (sentenceEnded) {
      if (isClosersOnly(word.text)) {
        current.push(word);
        continue;
      }
      sentenceEnded = false;
      emit(current);
      current = [];
    }
    // Make room for the word: cut at the last phrase boundary if there is one, else before the word.
    while (current.length && lengthOf([...current, word]) > limit()) {
      let cut = current.length;
      for (let i = current.length - 2; i >= 0; i--) {
        if (current[i]!.boundary) {
          cut = i + 1;
          break;
        }
      }
      emit(current.slice(0, cut));
      current = current.slice(cut);
    }
    current.push(word);
    sentenceEnded = word.boundary === 'sentence';
  }
  emit(current);
  // Whitespace-only input yields no chunk (nothing is spoken, nothing is charged).
  return chunks;
}
