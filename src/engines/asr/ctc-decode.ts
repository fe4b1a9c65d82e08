/**
 * CTC decoding as pure functions: vocabulary files → text pieces, greedy decoding (argmax, collapse
 * repeats, drop blank) with frame spans, token times → words → segments, and the plan that cuts long audio
 * into chunks at silences. Kept free of onnxruntime so every edge case is unit-tested on made-up scores.
 */

export interface CtcToken {
  id: number;
  /** First and last frame of the token's run of argmax frames. */
  startFrame: number;
  endFrame: number;
}

export interface Timing {
  /** Hop between output frames (wav2vec2 0.02 s; NeMo 0.02 s QuartzNet, 0.08 s FastConformer). */
  frameSeconds: number;
  /** Audio one frame sees: frame i covers [i·frameSeconds, i·frameSeconds + windowSeconds]. */
  windowSeconds: number;
  /** Where frame 0 starts in the whole input (the chunk's offset). */
  offsetSeconds: number;
}

export interface Word {
  text: string;
  start: number;
  end: number;
}

export interface Segment {
  start: number;
  end: number;
  text: string;
  words: Word[];
}

/**
 * Greedy CTC over row-major scores [frames, vocab]: argmax per frame, consecutive equal argmaxes form one
 * run, blank runs are dropped. A blank between two equal symbols keeps them apart ("kk").
 */
export function greedyCtc(scores: ArrayLike<number>, frames: number, vocab: number, blank: number): CtcToken[] {
  return tokensFromIds(argmaxFrames(scores, vocab, 0, frames), blank);
}

/** The best class of each frame in [from, to) of row-major scores [frames, vocab] (the first on a tie). */
export function argmaxFrames(scores: ArrayLike<number>, vocab: number, from: number, to: number): Int32Array {
  const ids = new Int32Array(Math.max(0, to - from));
  for (let t = from; t < to; t++) {
    const row = t * vocab;
    let best = 0;
    let bestScore = scores[row]!;
    for (let k = 1; k < vocab; k++) {
      const s = scores[row + k]!;
      if (s > bestScore) {
        bestScore = s;
        best = k;
      }
    }
    ids[t - from] = best;
  }
  return ids;
}

/**
 * Frame argmaxes → tokens: consecutive equal ids form one run, blank runs are dropped. Frames are numbered
 * from `firstFrame` (a chunk's place in the whole), so the runs of several chunks joined are one sequence.
 */
export function tokensFromIds(ids: ArrayLike<number>, blank: number, firstFrame = 0): CtcToken[] {
  const tokens: CtcToken[] = [];
  let previous = -1;
  for (let i = 0; i < ids.length; i++) {
    const best = ids[i]!;
    const t = firstFrame + i;
    if (best !== blank) {
      if (best === previous) tokens[tokens.length - 1]!.endFrame = t;
      else tokens.push({ id: best, startFrame: t, endFrame: t });
    }
    previous = best;
  }
  return tokens;
}

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;

/**
 * Token text pieces → words with times. `pieces[id]` is what a token writes: special tokens write '',
 * word delimiters (wav2vec2 `|`, SentencePiece `▁`) write a space; a space ends the current word, and
 * so does a pause of at least `wordBreakSeconds` between tokens.
 */
export function tokensToWords(tokens: CtcToken[], pieces: readonly string[], timing: Timing, wordBreakSeconds = Infinity): Word[] {
  const words: Word[] = [];
  let current: Word | null = null;
  let lastEnd = -Infinity;
  for (const token of tokens) {
    const piece = pieces[token.id] ?? '';
    const start = timing.offsetSeconds + token.startFrame * timing.frameSeconds;
    const end = timing.offsetSeconds + token.endFrame * timing.frameSeconds + timing.windowSeconds;
    // Models need not emit a delimiter before a long silence: the pause itself ends the word.
    if (current && piece && start - lastEnd >= wordBreakSeconds) {
      words.push(current);
      current = null;
    }
    if (piece) lastEnd = end;
    for (const char of piece) {
      if (/\s/u.test(char)) {
        if (current) words.push(current);
        current = null;
      } else if (current) {
        current.text += char;
        current.end = round(end);
      } else {
        current = { text: char, start: round(start), end: round(end) };
      }
    }
  }
  if (current) words.push(current);
  return words;
}

export interface SegmentOptions {
  /** A pause at least this long between two words starts a new segment. */
  minPauseSeconds: number;
  /** A word that would make the segment longer than this starts a new one. */
  maxSegmentSeconds: number;
}

export const DEFAULT_SEGMENT_OPTIONS: SegmentOptions = { minPauseSeconds: 0.5, maxSegmentSeconds: 15 };

/**
 * Groups words into segments incrementally, so chunked audio segments the same as one long run: a
 * segment is decided (returned) only once a later word starts the next one, or at `flush()`.
 */
export class Segmenter {
  private current: Word[] = [];

  constructor(private readonly options: SegmentOptions = DEFAULT_SEGMENT_OPTIONS) {}

  /** Adds words (in time order); returns the segments they close. */
  push(words: Word[]): Segment[] {
    const closed: Segment[] = [];
    for (const word of words) {
      const last = this.current.at(-1);
      const first = this.current[0];
      if (last && first && (word.start - last.end >= this.options.minPauseSeconds || word.end - first.start > this.options.maxSegmentSeconds)) {
        closed.push(...this.flush());
      }
      this.current.push(word);
    }
    return closed;
  }

  flush(): Segment[] {
    const words = this.current;
    this.current = [];
    if (!words.length) return [];
    return [{ start: words[0]!.start, end: words.at(-1)!.end, text: words.map((w) => w.text).join(' '), words }];
  }
}

export function groupSegments(words: Word[], options: SegmentOptions = DEFAULT_SEGMENT_OPTIONS): Segment[] {
  const segmenter = new Segmenter(options);
  return [...segmenter.push(words), ...segmenter.flush()];
}

/** sherpa-onnx / NeMo `tokens.txt`: "<token> <id>" per line; a line holding only an id is the space token. */
export function parseTokensTxt(text: string): string[] {
  const tokens: string[] = [];
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.replace(/\r$/, '');
    if (!line.trim()) continue;
    const match = /^(.*?)[ \t]+(\d+)$/u.exec(line) ?? /^()(\d+)$/u.exec(line.trim());
    if (!match) throw new Error(`tokens.txt line ${index + 1} is not "<token> <id>": ${JSON.stringify(line)}`);
    tokens[Number(match[2])] = match[1] === '' ? ' ' : match[1]!;
  }
  for (let id = 0; id < tokens.length; id++) if (tokens[id] === undefined) throw new Error(`tokens.txt has no token with id ${id}`);
  return tokens;
}

/**
 * HF `vocab.json` (token → id) → id → token. MMS adapter repos nest one vocabulary per language
 * (`{"bam": {...}, "fra": {...}}`): `language` picks one.
 */
export function parseHfVocab(json: unknown, language?: string): string[] {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('vocab.json is not a JSON object');
  let table = json as Record<string, unknown>;
  const nested = Object.values(table).some((v) => typeof v === 'object' && v !== null);
  if (nested) {
    if (!language) throw new Error(`vocab.json holds one vocabulary per language (${Object.keys(table).slice(0, 8).join(', ')}, ...); set options.language`);
    const inner = table[language];
    if (typeof inner !== 'object' || inner === null) throw new Error(`vocab.json has no vocabulary for language ${language}`);
    table = inner as Record<string, unknown>;
  }
  const tokens: string[] = [];
  for (const [token, id] of Object.entries(table)) {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) throw new Error(`vocab.json: token ${JSON.stringify(token)} has id ${JSON.stringify(id)}`);
    tokens[id] = token;
  }
  return Array.from(tokens, (t) => t ?? '');
}

/** What each id writes: specials and the blank nothing, delimiters a space, SentencePiece `▁` a space. */
export function tokenPieces(tokens: readonly string[], options: { blank: number; delimiter?: string; specials?: Iterable<string> }): string[] {
  const specials = new Set(options.specials ?? []);
  return tokens.map((token, id) => {
    if (id === options.blank || specials.has(token)) return '';
    if (options.delimiter !== undefined && token === options.delimiter) return ' ';
    return token.replaceAll('▁', ' ');
  });
}

export interface Region {
  start: number;
  end: number;
}

/**
 * Cuts [0, total] into chunks of at most `maxSeconds` for separate model runs (the Whisper runner; the CTC
 * runner joins chunk frames instead, see frames-walk.ts). Each cut falls inside the
 * last gap between speech regions that fits, at the point `pickCut(from, to)` chooses (the runner picks the
 * quietest moment); speech that never pauses for that long is cut the same way in the second half of the
 * window. Chunks are not trimmed to the VAD regions, since VAD onsets can come late and would clip a word;
 * chunks with no speech region at all are dropped.
 */
export function planChunks(regions: Region[], total: number, maxSeconds: number, pickCut: (from: number, to: number) => number): Region[] {
  return [...chunkSteps(regions, total, maxSeconds, pickCut)].filter((step) => step.speech).map(({ start, end }) => ({ start, end }));
}

/**
 * The steps of planChunks one at a time, from `from` (a step's end) on, the dropped ones included
 * (`speech: false`). A step from `start` depends on the regions up to `start + maxSeconds`, on whether
 * `total` lies beyond that, and on whether any region follows the window's last one (the pause after it is
 * a gap only then): what lets audio that arrives in windows be planned as it comes (asr/streamed-chunks.ts).
 */
export function* chunkSteps(
  regions: Region[],
  total: number,
  maxSeconds: number,
  pickCut: (from: number, to: number) => number,
  from = 0,
): Generator<Region & { speech: boolean }> {
  const sorted = [...regions].sort((a, b) => a.start - b.start);
  const gaps = sorted
    .slice(1)
    .map((r, i) => ({ start: sorted[i]!.end, end: r.start }))
    .filter((g) => g.end > g.start);
  let start = from;
  while (start < total) {
    let end = total;
    if (total - start > maxSeconds) {
      const limit = start + maxSeconds;
      // Only gaps that begin after the chunk's start: the gap the last cut fell in is behind us. Picking it
      // again cut a sliver between that cut and the gap's end (dropped as speechless), and once the sliver
      // shrank to nothing, fell back to cutting at the hard limit, through a word.
      const gap = gaps.filter((g) => g.start >= start && g.start < limit).at(-1);
      end = gap ? pickCut(Math.max(gap.start, start), Math.min(gap.end, limit)) : pickCut(start + maxSeconds / 2, limit);
      if (!(end > start && end <= limit)) end = limit;
    }
    yield { start, end, speech: sorted.some((r) => r.end > start && r.start < end) };
    start = end;
  }
}
