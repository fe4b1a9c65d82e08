/**
 * Whisper's decoding pieces on made-up logits and token sequences: special ids found by string (real
 * multilingual ids, a Bambara fine-tune's `<|bm|>` after the timestamps, and the demo's renumbered ids),
 * the prompt, OpenAI's timestamp rules, greedy and seeded sampling, and segments and seek per window.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TIMESTAMP_COUNT,
  applyRules,
  buildPrompt,
  isText,
  isTimestamp,
  seededRandom,
  selectToken,
  whisperVocab,
  windowSegments,
  type TokenLookup,
  type WhisperVocab,
} from '../../../../src/engines/asr/whisper-decode.js';
import { TextTokenizer } from '../../../../src/engines/text/tokenizer.js';
import { WHISPER_LANGUAGES, generateWhisperModel } from '../../../../models/generator/demo-whisper.js';

/** The multilingual Whisper v2 added tokens (ids 50257–51864), optionally `<|bm|>` at 51865, optionally without timestamps. */
function realLookup(options: { bm?: boolean; timestamps?: boolean } = {}): TokenLookup {
  const added = [
    '<|endoftext|>',
    '<|startoftranscript|>',
    ...WHISPER_LANGUAGES.map((l) => `<|${l}|>`),
    '<|translate|>',
    '<|transcribe|>',
    '<|startoflm|>',
    '<|startofprev|>',
    '<|nocaptions|>',
    '<|notimestamps|>',
  ];
  const tokens = added.map((content, i) => ({ id: 50257 + i, content }));
  if (options.timestamps !== false) for (let i = 0; i < TIMESTAMP_COUNT; i++) tokens.push({ id: 50364 + i, content: `<|${(i * 0.02).toFixed(2)}|>` });
  if (options.bm) tokens.push({ id: 51865, content: '<|bm|>' });
  const byContent = new Map(tokens.map((t) => [t.content, t.id]));
  return { tokenId: (t) => byContent.get(t), addedTokens: () => tokens };
}

const REAL: WhisperVocab = whisperVocab(realLookup({ bm: true }), 51866);
const BM = 51865;
const ts = (seconds: number, vocab = REAL) => vocab.timestampBegin + Math.round(seconds / 0.02);
const flat = (vocab = REAL) => new Float32Array(vocab.size);
const allowed = (logits: Float32Array) => [...logits.keys()].filter((id) => logits[id] !== -Infinity);
/** Zero logits with every timestamp at −10, so the timestamps' summed probability stays below a text token's. */
const quietTimestamps = (vocab = REAL) => flat(vocab).fill(-10, vocab.timestampBegin, vocab.timestampBegin + TIMESTAMP_COUNT);

describe('whisperVocab', () => {
  it('finds the multilingual ids by string and treats only the 1501 ids after <|notimestamps|> as timestamps', () => {
    expect([REAL.eot, REAL.sot, REAL.translate, REAL.transcribe, REAL.noTimestamps, REAL.timestampBegin]).toEqual([50257, 50258, 50358, 50359, 50363, 50364]);
    expect(REAL.languages.get('bm')).toBe(BM);
    expect(REAL.languages.get('en')).toBe(50259);
    expect(REAL.languages.size).toBe(100);
    expect(isTimestamp(REAL, 51864)).toBe(true); // <|30.00|>
    expect(isTimestamp(REAL, BM)).toBe(false);
    expect(isText(REAL, BM)).toBe(false);
    expect(isText(REAL, 50256)).toBe(true);
    expect(isText(REAL, REAL.eot)).toBe(false);
  });

  it('computes the timestamp range from <|notimestamps|> when tokenizer.json does not list the timestamps', () => {
    const vocab = whisperVocab(realLookup({ timestamps: false }), 51865);
    expect(vocab.timestampBegin).toBe(50364);
    expect(isTimestamp(vocab, 50364 + 1500)).toBe(true);
  });

  it('rejects a tokenizer whose timestamps are not right after <|notimestamps|>, or a vocabulary too small for them', () => {
    const lookup = realLookup();
    const shifted: TokenLookup = { ...lookup, tokenId: (t) => (t === '<|0.00|>' ? 50365 : lookup.tokenId(t)) };
    expect(() => whisperVocab(shifted, 51865)).toThrow(/<\|0\.00\|> at 50365, expected 50364/);
    expect(() => whisperVocab(lookup, 51000)).toThrow(/too few for 1501 timestamps/);
    expect(() => whisperVocab({ tokenId: () => undefined, addedTokens: () => [] }, 100)).toThrow(/no <\|notimestamps\|>: not a Whisper tokenizer/);
  });

  describe('on the demo tokenizer (renumbered ids, <|bm|> after the timestamps)', () => {
    let dir: string;
    beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-whisper-vocab-'));
      await generateWhisperModel(dir);
    });
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('looks every id up by string: nothing is at its stock Whisper id', () => {
      const tokenizer = TextTokenizer.fromDirectory(path.join(dir, 'whisper'));
      const config = JSON.parse(fs.readFileSync(path.join(dir, 'whisper', 'config.json'), 'utf8')) as { vocab_size: number };
      const vocab = whisperVocab(tokenizer, config.vocab_size);
      expect(vocab.eot).toBe(tokenizer.tokenId('<|endoftext|>'));
      expect(vocab.eot).not.toBe(50257);
      expect(vocab.timestampBegin).toBe(tokenizer.tokenId('<|0.00|>'));
      expect(tokenizer.tokenId('<|30.00|>')).toBe(vocab.timestampBegin + 1500);
      expect(vocab.languages.get('bm')).toBe(vocab.timestampBegin + 1501);
      expect(vocab.size).toBe(vocab.timestampBegin + 1502);
      expect(buildPrompt(vocab, { task: 'transcribe', timestamps: true, language: vocab.languages.get('bm')! })).toEqual(
        ['<|startoftranscript|>', '<|bm|>', '<|transcribe|>'].map((t) => tokenizer.tokenId(t)),
      );
    });
  });
});

describe('buildPrompt', () => {
  it('is <|startoftranscript|> [language] task [<|notimestamps|>]', () => {
    expect(buildPrompt(REAL, { task: 'transcribe', timestamps: true, language: BM })).toEqual([50258, BM, 50359]);
    expect(buildPrompt(REAL, { task: 'translate', timestamps: false })).toEqual([50258, 50358, 50363]);
  });

  it('refuses to translate with a vocabulary that has no <|translate|>', () => {
    const { translate: _, ...noTranslate } = REAL;
    expect(() => buildPrompt(noTranslate, { task: 'translate', timestamps: true })).toThrow(/no <\|translate\|> token/);
  });
});

describe('applyRules (OpenAI ApplyTimestampRules)', () => {
  const rules = { timestamps: true, maxInitialTimestampIndex: 50 };

  it('starts with a timestamp no later than max_initial_timestamp', () => {
    const logits = flat();
    applyRules(logits, [], REAL, rules);
    expect(allowed(logits)).toEqual(Array.from({ length: 51 }, (_, i) => 50364 + i));
  });

  it('never generates special tokens such as <|bm|>, <|startoftranscript|> or a language, even when they score highest', () => {
    const logits = flat();
    logits[BM] = 100;
    logits[50259] = 90;
    logits[REAL.sot] = 80;
    logits[123] = 10;
    applyRules(logits, [ts(0.5), 7], REAL, rules);
    expect(logits[BM]).toBe(-Infinity);
    expect(logits[50259]).toBe(-Infinity);
    expect(logits[REAL.sot]).toBe(-Infinity);
    expect(selectToken(logits, 0, Math.random)).toBe(123);
  });

  it('follows an opening timestamp with text or the end, never another timestamp', () => {
    const logits = flat();
    applyRules(logits, [ts(0.5)], REAL, rules);
    expect(allowed(logits).some((id) => isTimestamp(REAL, id))).toBe(false);
    expect(logits[REAL.eot]).toBe(0);
    expect(logits[42]).toBe(0);
  });

  it('follows a closing timestamp with an opening one at the same time or later, or the end — never text', () => {
    const logits = quietTimestamps();
    applyRules(logits, [ts(0.5), 42, ts(1.2)], REAL, rules);
    const kept = allowed(logits);
    expect(kept[0]).toBe(REAL.eot);
    expect(kept.slice(1)).toEqual(Array.from({ length: 51864 - ts(1.2) + 1 }, (_, i) => ts(1.2) + i));
  });

  it('after text, allows only timestamps later than the last one (segments never have zero length)', () => {
    const logits = quietTimestamps();
    applyRules(logits, [ts(0.5), 42], REAL, rules);
    expect(logits[ts(0.5)]).toBe(-Infinity);
    expect(logits[ts(0.52)]).toBe(-10);
    expect(logits[42]).toBe(0);
  });

  it('forces a timestamp when the timestamps together outweigh every other token', () => {
    const logits = flat().fill(-30);
    logits[42] = 5;
    for (let i = 0; i < 20; i++) logits[ts(1 + i * 0.02)] = 3; // each below the text token, together above it
    applyRules(logits, [ts(0.5), 41], REAL, rules);
    expect(logits[42]).toBe(-Infinity);
    expect(selectToken(logits, 0, Math.random)).toBe(ts(1));
  });

  it('counts only the timestamp range in that sum, not <|bm|> after it', () => {
    const logits = flat().fill(-30);
    logits[42] = 5;
    logits[BM] = 50; // would dominate a sum taken over every id from <|0.00|> on
    logits[ts(1)] = 4;
    applyRules(logits, [ts(0.5), 41], REAL, rules);
    expect(selectToken(logits, 0, Math.random)).toBe(42);
  });

  it('masks every timestamp without timestamps, and applies suppress / begin-suppress lists', () => {
    const logits = flat();
    applyRules(logits, [], REAL, { timestamps: false, suppress: [7], beginSuppress: [220, REAL.eot] });
    expect(allowed(logits).some((id) => isTimestamp(REAL, id))).toBe(false);
    expect([logits[7], logits[220], logits[REAL.eot], logits[8]]).toEqual([-Infinity, -Infinity, -Infinity, 0]);
    const later = flat();
    applyRules(later, [8], REAL, { timestamps: false, beginSuppress: [220, REAL.eot] });
    expect([later[220], later[REAL.eot]]).toEqual([0, 0]);
  });
});

describe('selectToken', () => {
  const logits = Float32Array.from([0, 2, 1.5, -Infinity]);

  it('is the argmax at temperature 0', () => {
    expect(selectToken(logits, 0, () => 0.999)).toBe(1);
  });

  it('samples reproducibly from a seed, in proportion to softmax(logits / T), never a masked token', () => {
    const draw = (seed: number) => {
      const random = seededRandom(seed);
      return Array.from({ length: 2000 }, () => selectToken(logits, 1, random));
    };
    const a = draw(7);
    expect(draw(7)).toEqual(a);
    expect(draw(8)).not.toEqual(a);
    const share = (id: number) => a.filter((x) => x === id).length / a.length;
    const z = 1 + Math.exp(2) + Math.exp(1.5);
    expect(share(1)).toBeCloseTo(Math.exp(2) / z, 1);
    expect(share(2)).toBeCloseTo(Math.exp(1.5) / z, 1);
    expect(share(3)).toBe(0);
  });
});

describe('windowSegments (OpenAI transcribe.py segments and seek)', () => {
  const text = [11, 12, 13];

  it('splits at consecutive timestamps and consumes a window that ends in a single timestamp', () => {
    const tokens = [ts(0.54), 11, 12, ts(1.56), ts(3.04), 13, ts(5.72)];
    expect(windowSegments(tokens, REAL, 30)).toEqual({
      segments: [
        { start: 0.54, end: 1.56, tokens: [11, 12] },
        { start: 3.04, end: 5.72, tokens: [13] },
      ],
      consumed: 30,
    });
  });

  it('drops an unfinished last segment and seeks to the last closing timestamp', () => {
    const tokens = [ts(0.54), 11, 12, ts(1.56), ts(3.04), 13];
    const result = windowSegments(tokens, REAL, 30);
    expect(result.segments).toEqual([{ start: 0.54, end: 1.56, tokens: [11, 12] }]);
    expect(result.consumed).toBeCloseTo(1.56, 9);
  });

  it('takes a single segment from its opening to its closing timestamp and consumes the window', () => {
    expect(windowSegments([ts(0.3), ...text, ts(2)], REAL, 12)).toEqual({ segments: [{ start: 0.3, end: 2, tokens: text }], consumed: 12 });
    // No closing timestamp (cut off): it runs to the end of the window's audio.
    expect(windowSegments([ts(0.3), ...text], REAL, 12)).toEqual({ segments: [{ start: 0.3, end: 12, tokens: text }], consumed: 12 });
  });

  it('gives an empty segment for silence (<|0.00|> then the end) and nothing for no tokens', () => {
    expect(windowSegments([ts(0)], REAL, 3)).toEqual({ segments: [{ start: 0, end: 3, tokens: [] }], consumed: 3 });
    expect(windowSegments([], REAL, 3)).toEqual({ segments: [], consumed: 3 });
  });

  it('clamps times to the window’s audio and never leaves <|bm|> or timestamps in a segment’s text', () => {
    const { segments } = windowSegments([ts(1), 11, BM, ts(9.5)], REAL, 8);
    expect(segments).toEqual([{ start: 1, end: 8, tokens: [11] }]);
  });
});
