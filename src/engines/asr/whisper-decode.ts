/**
 * Whisper decoding as pure functions, free of onnxruntime so each rule is unit-tested on made-up logits:
 * the special token ids (looked up by string in tokenizer.json — fine-tunes renumber nothing but add
 * tokens such as `<|bm|>` after the timestamps, so only the 1501 ids after `<|notimestamps|>` are
 * timestamps), the prompt, the logit rules of OpenAI's `decoding.py` (timestamps in pairs, non-decreasing,
 * first ≤ max_initial_timestamp, after text only a timestamp or end of text, a timestamp forced when the
 * timestamps together outweigh every other token), greedy or seeded sampling, and the segments and seek of
 * OpenAI's `transcribe.py`.
 */

export const TIMESTAMP_COUNT = 1501;
export const TIME_PRECISION = 0.02;

export interface WhisperVocab {
  eot: number;
  sot: number;
  transcribe: number;
  /** Absent on English-only models and on fine-tunes that dropped it. */
  translate?: number;
  noTimestamps: number;
  /** `<|0.00|>`; `<|30.00|>` is timestampBegin + 1500. */
  timestampBegin: number;
  /** Language code (`bm`, `en`, ...) → token id. */
  languages: Map<string, number>;
  /** Rows of the logits (may exceed the tokenizer's count: padding rows). */
  size: number;
  /** Ids of added tokens that are not timestamps (`<|endoftext|>` included). */
  specials: ReadonlySet<number>;
}

export interface TokenLookup {
  tokenId(token: string): number | undefined;
  addedTokens(): Array<{ id: number; content: string }>;
}

const TIMESTAMP_TOKEN = /^<\|\d+\.\d\d\|>$/;
const LANGUAGE_TOKEN = /^<\|([a-z]{2,3}(?:[-_][A-Za-z]+)?)\|>$/;

export function whisperVocab(tokenizer: TokenLookup, size: number): WhisperVocab {
  const need = (token: string) => {
    const id = tokenizer.tokenId(token);
    if (id === undefined) throw new Error(`tokenizer.json has no ${token}: not a Whisper tokenizer`);
    return id;
  };
  const noTimestamps = need('<|notimestamps|>');
  const timestampBegin = noTimestamps + 1;
  // Older tokenizer.json files do not list the timestamps; where they do, they must sit right after <|notimestamps|>.
  for (const [token, id] of [
    ['<|0.00|>', timestampBegin],
    ['<|30.00|>', timestampBegin + TIMESTAMP_COUNT - 1],
  ] as const) {
    const found = tokenizer.tokenId(token);
    if (found !== undefined && found !== id) throw new Error(`tokenizer.json puts ${token} at ${found}, expected ${id} (right after <|notimestamps|>)`);
  }
  if (size < timestampBegin + TIMESTAMP_COUNT)
    throw new Error(`The vocabulary has ${size} ids, too few for 1501 timestamps after <|notimestamps|> (${noTimestamps})`);
  const added = tokenizer.addedTokens();
  const languages = new Map<string, number>();
  for (const { id, content } of added) {
    const match = LANGUAGE_TOKEN.exec(content);
    if (match && !TIMESTAMP_TOKEN.test(content)) languages.set(match[1]!, id);
  }
  const translate = tokenizer.tokenId('<|translate|>');
  return {
    eot: need('<|endoftext|>'),
    sot: need('<|startoftranscript|>'),
    transcribe: need('<|transcribe|>'),
    ...(translate === undefined ? {} : { translate }),
    noTimestamps,
    timestampBegin,
    languages,
    size,
    specials: new Set(
      added.filter((t) => !TIMESTAMP_TOKEN.test(t.content) && !(t.id >= timestampBegin && t.id < timestampBegin + TIMESTAMP_COUNT)).map((t) => t.id),
    ),
  };
}

export const isTimestamp = (vocab: WhisperVocab, id: number) => id >= vocab.timestampBegin && id < vocab.timestampBegin + TIMESTAMP_COUNT;
/** Text tokens: neither an added special token nor a timestamp, and inside the tokenizer's ids. */
export const isText = (vocab: WhisperVocab, id: number) =>
  id >= 0 && id < vocab.size && !vocab.specials.has(id) && !isTimestamp(vocab, id) && id < vocab.timestampBegin;

export interface PromptOptions {
  language?: number;
  task: 'transcribe' | 'translate';
  timestamps: boolean;
}

/** `<|startoftranscript|> [<|lang|>] <|transcribe|>|<|translate|> [<|notimestamps|>]` */
export function buildPrompt(vocab: WhisperVocab, options: PromptOptions): number[] {
  if (options.task === 'translate' && vocab.translate === undefined) throw new Error('This Whisper model has no <|translate|> token: it cannot translate');
  const task = options.task === 'translate' ? vocab.translate! : vocab.transcribe;
  return [vocab.sot, ...(options.language === undefined ? [] : [options.language]), task, ...(options.timestamps ? [] : [vocab.noTimestamps])];
}

export interface RuleOptions {
  timestamps: boolean;
  /** Index (20 ms units) of the latest allowed first timestamp; undefined: no limit. */
  maxInitialTimestampIndex?: number;
  /** generation_config `suppress_tokens` (every step) and `begin_suppress_tokens` (first step). */
  suppress?: readonly number[];
  beginSuppress?: readonly number[];
}

/**
 * Masks `logits` (in place, to −Infinity) for the next token after `sampled` (the generated tokens, prompt
 * excluded). Special tokens other than `<|endoftext|>` are never generated.
 */
export function applyRules(logits: Float32Array, sampled: readonly number[], vocab: WhisperVocab, options: RuleOptions): void {
  const begin = vocab.timestampBegin;
  const end = begin + TIMESTAMP_COUNT;
  const mask = (from: number, to: number, keep: (id: number) => boolean = () => false) => {
    for (let id = Math.max(0, from); id < Math.min(to, logits.length); id++) if (!keep(id)) logits[id] = -Infinity;
  };
  for (const id of vocab.specials) if (id !== vocab.eot && id < logits.length) logits[id] = -Infinity;
  mask(end, logits.length); // padding rows and tokens added after the timestamps (<|bm|>)
  for (const id of options.suppress ?? []) if (id >= 0 && id < logits.length) logits[id] = -Infinity;
  if (sampled.length === 0) for (const id of options.beginSuppress ?? []) if (id >= 0 && id < logits.length) logits[id] = -Infinity;
  if (!options.timestamps) return mask(begin, end);

  const isTs = (id: number | undefined) => id !== undefined && id >= begin && id < end;
  const lastWasTimestamp = isTs(sampled.at(-1));
  const penultimateWasTimestamp = sampled.length < 2 || isTs(sampled.at(-2));
  if (lastWasTimestamp) {
    if (penultimateWasTimestamp)
      mask(begin, end); // an opening timestamp is followed by text (or the end)
    else mask(0, begin, (id) => id === vocab.eot); // a closing one by the next opening timestamp or the end
  }
  const lastTimestamp = [...sampled].reverse().find(isTs);
  if (lastTimestamp !== undefined) {
    // Non-decreasing, and every segment has a non-zero length (no endless loop of empty segments).
    const floor = lastWasTimestamp && !penultimateWasTimestamp ? lastTimestamp : lastTimestamp + 1;
    mask(begin, floor);
  }
  if (sampled.length === 0) {
    mask(0, begin);
    if (options.maxInitialTimestampIndex !== undefined) mask(begin + options.maxInitialTimestampIndex + 1, end);
  }
  // When the timestamps together are likelier than any single other token, a timestamp it is.
  let max = -Infinity;
  for (const v of logits) if (v > max) max = v;
  if (max === -Infinity) return;
  let sum = 0;
  for (const v of logits) sum += Math.exp(v - max);
  const logZ = max + Math.log(sum);
  let tsSum = 0;
  for (let id = begin; id < Math.min(end, logits.length); id++) tsSum += Math.exp(logits[id]! - max);
  const timestampLogprob = tsSum > 0 ? max + Math.log(tsSum) - logZ : -Infinity;
  let maxOther = -Infinity;
  for (let id = 0; id < begin; id++) if (logits[id]! > maxOther) maxOther = logits[id]!;
  if (timestampLogprob > maxOther - logZ) mask(0, begin);
}

/** mulberry32: a small seeded generator of floats in [0, 1), so sampling is reproducible. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Greedy at temperature 0; otherwise a draw from softmax(logits / temperature). */
export function selectToken(logits: Float32Array, temperature: number, random: () => number): number {
  let best = 0;
  for (let id = 1; id < logits.length; id++) if (logits[id]! > logits[best]!) best = id;
  if (temperature <= 0) return best;
  const top = logits[best]!;
  const weights = Float64Array.from(logits, (v) => (v === -Infinity ? 0 : Math.exp((v - top) / temperature)));
  const total = weights.reduce((a, b) => a + b, 0);
  let draw = random() * total;
  for (let id = 0; id < weights.length; id++) {
    draw -= weights[id]!;
    if (draw < 0 && weights[id]! > 0) return id;
  }
  return best;
}

export interface RawSegment {
  /** Seconds from the window start. */
  start: number;
  end: number;
  /** The segment's text tokens (timestamps removed). */
  tokens: number[];
}

/**
 * Segments of one window from its generated tokens (`<|endoftext|>` removed), and how far the window was
 * consumed (OpenAI `transcribe.py`): segments run between consecutive timestamp pairs; a window ending in a
 * single timestamp (or with no timestamp pair at all) is consumed whole, otherwise the unfinished last
 * segment is dropped and the next window starts at the last closing timestamp. Times are clamped to the
 * window's audio. Where OpenAI starts a window's only segment at the window start, this uses the opening
 * timestamp when there is one.
 */
export function windowSegments(tokens: readonly number[], vocab: WhisperVocab, windowSeconds: number): { segments: RawSegment[]; consumed: number } {
  const ts = (id: number) => (id - vocab.timestampBegin) * TIME_PRECISION;
  const flags = tokens.map((id) => isTimestamp(vocab, id));
  const clamp = (t: number) => Math.min(Math.max(t, 0), windowSeconds);
  const make = (slice: readonly number[], start: number, end: number): RawSegment => ({
    start: clamp(start),
    end: clamp(end),
    tokens: slice.filter((id) => isText(vocab, id)),
  });
  const singleTimestampEnding = flags.length >= 2 && !flags.at(-2) && flags.at(-1) === true;
  const slices: number[] = [];
  for (let i = 1; i < flags.length; i++) if (flags[i - 1] && flags[i]) slices.push(i);
  if (slices.length > 0) {
    if (singleTimestampEnding) slices.push(tokens.length);
    const segments: RawSegment[] = [];
    let last = 0;
    for (const current of slices) {
      const slice = tokens.slice(last, current);
      segments.push(make(slice, ts(slice[0]!), ts(slice.at(-1)!)));
      last = current;
    }
    const consumed = singleTimestampEnding ? windowSeconds : clamp(ts(tokens[last - 1]!));
    // A last closing timestamp at 0 would never advance: consume the window instead.
    return { segments, consumed: consumed > 0 ? consumed : windowSeconds };
  }
  const stamps = tokens.filter((id) => isTimestamp(vocab, id));
  const start = flags[0] ? ts(tokens[0]!) : 0;
  let end = windowSeconds;
  if (stamps.length > 0 && stamps.at(-1) !== vocab.timestampBegin && ts(stamps.at(-1)!) > start) end = ts(stamps.at(-1)!);
  return { segments: tokens.length ? [make(tokens, start, end)] : [], consumed: windowSeconds };
}
