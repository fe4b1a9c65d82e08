/** CTC decoding on made-up scores: greedy collapse, blanks, delimiters, timings, segmenting, vocab files, chunk plans. */
import { describe, expect, it } from 'vitest';
import {
  Segmenter,
  greedyCtc,
  groupSegments,
  parseHfVocab,
  parseTokensTxt,
  planChunks,
  tokenPieces,
  tokensToWords,
  type Word,
} from '../../../../src/engines/asr/ctc-decode.js';

/** One-hot-ish scores [frames, vocab] whose argmax per frame is `ids[t]`. */
function scoresFor(ids: number[], vocab: number): Float32Array {
  const out = new Float32Array(ids.length * vocab).fill(-5);
  ids.forEach((id, t) => (out[t * vocab + id] = 1));
  return out;
}

const timing = { frameSeconds: 0.02, windowSeconds: 0.025, offsetSeconds: 0 };

describe('greedyCtc', () => {
  it('collapses repeated frames into one token and drops blanks', () => {
    const B = 3;
    expect(greedyCtc(scoresFor([B, 0, 0, B, 1, 1, 1, B], 4), 8, 4, B)).toEqual([
      { id: 0, startFrame: 1, endFrame: 2 },
      { id: 1, startFrame: 4, endFrame: 6 },
    ]);
  });

  it('keeps a repeated symbol twice when a blank separates the runs ("kk")', () => {
    expect(greedyCtc(scoresFor([2, 2, 0, 2], 3), 4, 3, 0).map((t) => t.id)).toEqual([2, 2]);
  });

  it('treats whatever id is the blank as the blank (first or last)', () => {
    expect(greedyCtc(scoresFor([0, 1, 0], 2), 3, 2, 0).map((t) => t.id)).toEqual([1]);
    expect(greedyCtc(scoresFor([0, 1, 0], 2), 3, 2, 1).map((t) => t.id)).toEqual([0, 0]);
  });

  it('returns nothing for no frames or all-blank frames', () => {
    expect(greedyCtc(new Float32Array(0), 0, 4, 3)).toEqual([]);
    expect(greedyCtc(scoresFor([3, 3, 3], 4), 3, 4, 3)).toEqual([]);
  });

  it('picks the first of equal maxima, as argmax does', () => {
    expect(greedyCtc(Float32Array.from([1, 1, 0]), 1, 3, 2)).toEqual([{ id: 0, startFrame: 0, endFrame: 0 }]);
  });
});

describe('tokensToWords', () => {
  const pieces = ['a', 'b', ' ', '', ''];

  it('splits words at delimiters and times them from frame indices', () => {
    const tokens = [
      { id: 0, startFrame: 2, endFrame: 4 },
      { id: 1, startFrame: 6, endFrame: 6 },
      { id: 2, startFrame: 8, endFrame: 9 },
      { id: 1, startFrame: 11, endFrame: 12 },
    ];
    expect(tokensToWords(tokens, pieces, { ...timing, offsetSeconds: 10 })).toEqual([
      { text: 'ab', start: 10.04, end: 10.145 },
      { text: 'b', start: 10.22, end: 10.265 },
    ]);
  });

  it('ignores leading, trailing and repeated delimiters and special tokens', () => {
    const tokens = [2, 0, 2, 2, 3, 1, 4, 2].map((id, i) => ({ id, startFrame: i * 2, endFrame: i * 2 }));
    expect(tokensToWords(tokens, pieces, timing).map((w) => w.text)).toEqual(['a', 'b']);
  });

  it('starts a word at SentencePiece pieces that carry the ▁ boundary', () => {
    const sp = tokenPieces(['<unk>', '▁ni', 'ce', '▁a', '<blk>'], { blank: 4, specials: ['<unk>'] });
    const tokens = [1, 2, 3, 0].map((id, i) => ({ id, startFrame: i, endFrame: i }));
    expect(tokensToWords(tokens, sp, timing).map((w) => w.text)).toEqual(['nice', 'a']);
  });

  it('ends a word at a long pause even without a delimiter', () => {
    const tokens = [
      { id: 0, startFrame: 0, endFrame: 1 },
      { id: 1, startFrame: 40, endFrame: 41 },
      { id: 0, startFrame: 43, endFrame: 43 },
    ];
    expect(tokensToWords(tokens, pieces, timing, 0.5).map((w) => w.text)).toEqual(['a', 'ba']);
    expect(tokensToWords(tokens, pieces, timing).map((w) => w.text)).toEqual(['aba']);
  });
});

describe('segments', () => {
  const w = (text: string, start: number, end: number): Word => ({ text, start, end });

  it('starts a new segment at a pause of at least minPauseSeconds', () => {
    const words = [w('i', 0, 0.2), w('ni', 0.5, 0.8), w('ce', 1.3, 1.6)];
    expect(groupSegments(words, { minPauseSeconds: 0.5, maxSegmentSeconds: 15 })).toEqual([
      { start: 0, end: 0.8, text: 'i ni', words: words.slice(0, 2) },
      { start: 1.3, end: 1.6, text: 'ce', words: words.slice(2) },
    ]);
  });

  it('starts a new segment when a word would push it past maxSegmentSeconds', () => {
    const words = Array.from({ length: 10 }, (_, i) => w(`w${i}`, i * 0.4, i * 0.4 + 0.3));
    const segments = groupSegments(words, { minPauseSeconds: 0.5, maxSegmentSeconds: 1.55 });
    expect(segments.map((s) => s.text)).toEqual(['w0 w1 w2 w3', 'w4 w5 w6 w7', 'w8 w9']);
    for (const s of segments) expect(s.end - s.start).toBeLessThanOrEqual(1.55);
  });

  it('returns no segment for no words', () => {
    expect(groupSegments([])).toEqual([]);
  });

  it('decides a segment only once a later word closes it, across pushes', () => {
    const segmenter = new Segmenter({ minPauseSeconds: 0.5, maxSegmentSeconds: 15 });
    expect(segmenter.push([w('a', 0, 0.1)])).toEqual([]);
    // Next chunk starts 0.2 s later: same segment, still open.
    expect(segmenter.push([w('b', 0.3, 0.4)])).toEqual([]);
    expect(segmenter.push([w('c', 2, 2.1)]).map((s) => s.text)).toEqual(['a b']);
    expect(segmenter.flush().map((s) => s.text)).toEqual(['c']);
    expect(segmenter.flush()).toEqual([]);
  });
});

describe('vocabulary files', () => {
  it('parses sherpa tokens.txt, where a line holding only an id is the space', () => {
    expect(parseTokensTxt('▁ 0\na 1\r\n  2\n<blk> 3\n\n')).toEqual(['▁', 'a', ' ', '<blk>']);
    expect(parseTokensTxt('5 1\nx 0\n')).toEqual(['x', '5']);
  });

  it('rejects tokens.txt with a malformed line or a missing id', () => {
    expect(() => parseTokensTxt('a 0\nb\n')).toThrow(/line 2/);
    expect(() => parseTokensTxt('a 0\nc 2\n')).toThrow(/no token with id 1/);
  });

  it('parses an HF vocab.json and an MMS per-language one', () => {
    expect(parseHfVocab({ b: 1, a: 0, '[PAD]': 2 })).toEqual(['a', 'b', '[PAD]']);
    const mms = { bam: { '<pad>': 0, a: 1 }, fra: { '<pad>': 0, e: 1 } };
    expect(parseHfVocab(mms, 'bam')).toEqual(['<pad>', 'a']);
    expect(() => parseHfVocab(mms)).toThrow(/one vocabulary per language.*options.language/);
    expect(() => parseHfVocab(mms, 'eng')).toThrow(/no vocabulary for language eng/);
    expect(() => parseHfVocab({ a: 'x' })).toThrow(/token "a" has id "x"/);
    expect(() => parseHfVocab([1, 2])).toThrow(/not a JSON object/);
  });

  it('maps the blank and specials to nothing and the delimiter to a space', () => {
    expect(tokenPieces(['a', '|', '[UNK]', '[PAD]'], { blank: 3, delimiter: '|', specials: ['[UNK]'] })).toEqual(['a', ' ', '', '']);
  });
});

describe('planChunks', () => {
  const mid = (from: number, to: number) => (from + to) / 2;

  it('keeps audio up to the limit as one chunk', () => {
    expect(planChunks([{ start: 1, end: 2 }], 30, 30, mid)).toEqual([{ start: 0, end: 30 }]);
  });

  it('cuts inside the last gap between speech regions that fits the limit', () => {
    const regions = [
      { start: 1, end: 8 },
      { start: 10, end: 18 },
      { start: 20, end: 27 },
      { start: 29, end: 35 },
    ];
    expect(planChunks(regions, 36, 20, mid)).toEqual([
      { start: 0, end: 19 },
      { start: 19, end: 36 },
    ]);
  });

  it('cuts speech that never pauses where pickCut says, in the second half of the window', () => {
    const cuts: Array<[number, number]> = [];
    const chunks = planChunks([{ start: 0, end: 50 }], 50, 20, (from, to) => (cuts.push([from, to]), to - 1));
    expect(cuts[0]).toEqual([10, 20]);
    expect(chunks).toEqual([
      { start: 0, end: 19 },
      { start: 19, end: 38 },
      { start: 38, end: 50 },
    ]);
  });

  it('never picks the gap the last cut fell in again: no sliver is dropped, no cut falls back to the hard limit', () => {
    // Silero's regions for the 148 s demo recording of issue P6 #9: two short "silences" inside speech.
    const regions = [
      { start: 0.034, end: 5.726 },
      { start: 6.082, end: 10.91 },
      { start: 11.17, end: 148.05 },
    ];
    const picked: number[] = [];
    const chunks = planChunks(regions, 148.1, 30, (from, to) => (picked.push(mid(from, to)), mid(from, to)));
    // Contiguous (all of it is speech), every cut where pickCut put it, the first inside the 10.91–11.17 gap.
    expect(chunks[0]).toEqual({ start: 0, end: 11.04 });
    chunks.slice(1).forEach((chunk, i) => expect(chunk.start).toBe(chunks[i]!.end));
    expect(chunks.map((c) => c.end)).toEqual([...picked, 148.1]);
    expect(chunks.at(-1)!.end).toBe(148.1);
  });

  it('drops chunks without any speech region and never exceeds the limit', () => {
    const chunks = planChunks(
      [
        { start: 2, end: 4 },
        { start: 70, end: 75 },
      ],
      80,
      30,
      () => 1e9,
    );
    expect(chunks).toEqual([
      { start: 0, end: 30 },
      { start: 60, end: 80 },
    ]);
  });
});
