/**
 * The long-audio CTC walk, free of onnxruntime: a stand-in model whose frame i depends on the samples around
 * it (a receptive field that fits the context), so chunks that keep their new audio's frames must join into
 * exactly the frames one run over the whole audio gives — whatever the audio's length and the sizes of the
 * windows it arrives in. And PathWords: words from a path given in pieces equal the whole path's words.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tokensFromIds, tokensToWords } from '../../../../src/engines/asr/ctc-decode.js';
import { framesWalk, type PathPiece } from '../../../../src/engines/asr/frames-walk.js';
import { PathWords } from '../../../../src/engines/asr/path-words.js';

const HOP = 320;
const SPAN = 400;
const CLASSES = 6;
const BLANK = 5;
const geometry = { hop: HOP, left: 3 * HOP, right: 2 * HOP, maxRun: 40 * HOP, minSamples: SPAN };

/** Frame i of `samples` (wav2vec2's geometry: floor((n − 400)/320) + 1 frames): a class from the samples it covers. */
function model(samples: Float32Array): Int32Array {
  const frames = samples.length < SPAN ? 0 : Math.floor((samples.length - SPAN) / HOP) + 1;
  const ids = new Int32Array(frames);
  for (let i = 0; i < frames; i++) {
    let sum = 0;
    for (let k = i * HOP; k < i * HOP + SPAN; k++) sum += samples[k]!;
    ids[i] = Math.abs(Math.round(sum)) % CLASSES;
  }
  return ids;
}

async function* windows(audio: Float32Array, sizes: number[]): AsyncGenerator<Float32Array> {
  for (let at = 0, i = 0; at < audio.length; i++) {
    const size = sizes[i % sizes.length]!;
    yield audio.slice(at, at + size);
    at += size;
  }
}

async function walked(audio: Float32Array, sizes: number[], silentRuns = false): Promise<PathPiece[]> {
  const pieces: PathPiece[] = [];
  const walk = framesWalk(windows(audio, sizes), {
    geometry,
    frames: async (samples, skip, take) => {
      const all = model(samples);
      return { ids: all.slice(skip, take === null ? all.length : skip + take), blank: BLANK };
    },
    silent: (samples) => silentRuns && samples.every((x) => x === 0),
    checkpoint: async () => {},
  });
  for await (const piece of walk) pieces.push(piece);
  return pieces;
}

function joined(pieces: PathPiece[]): number[] {
  const out: number[] = [];
  for (const p of pieces) {
    expect(p.firstFrame).toBe(out.length);
    out.push(...p.ids);
  }
  return out;
}

const audio = fc
  .integer({ min: 0, max: 200 * HOP })
  .chain((n) => fc.array(fc.integer({ min: -3, max: 3 }), { minLength: n, maxLength: n }).map((a) => Float32Array.from(a)));
const sizes = fc.array(fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 20_000 })), { minLength: 1, maxLength: 6 });

describe('framesWalk', () => {
  it('joins chunk frames into exactly the whole audio’s frames, for any length and window sizes', async () => {
    await fc.assert(
      fc.asyncProperty(audio, sizes, async (samples, windowSizes) => {
        expect(joined(await walked(samples, windowSizes))).toEqual(Array.from(model(samples)));
      }),
      { numRuns: 150, seed: 7 },
    );
  });

  it('runs no model on a stretch of digital silence a whole chunk long, and resumes on the same frames after it', async () => {
    const speech = Float32Array.from({ length: 30 * HOP }, (_, i) => ((i * 7) % 5) - 2);
    const samples = new Float32Array(speech.length * 2 + 200 * HOP);
    samples.set(speech);
    samples.set(speech, speech.length + 200 * HOP);
    let runs = 0;
    const pieces = await walked(samples, [4096], true);
    runs = pieces.length;
    const whole = model(samples);
    for (const p of pieces) expect(Array.from(p.ids)).toEqual(Array.from(whole.subarray(p.firstFrame, p.firstFrame + p.ids.length)));
    // 200 frames of silence span whole chunks that are skipped: fewer runs than a walk that runs every chunk.
    expect(runs).toBeLessThan((await walked(samples, [4096], false)).length);
  });
});

describe('PathWords', () => {
  const pieces = ['', 'a', 'b', ' ', 'cd', ''];
  const timing = { frameSeconds: 0.02, windowSeconds: 0.025 };
  it('gives the whole path’s words, whatever the pieces', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: CLASSES - 1 }), { maxLength: 400 }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 5 }),
        (ids, cuts) => {
          const whole = tokensToWords(tokensFromIds(ids, BLANK), pieces, { ...timing, offsetSeconds: 0 }, 0.1);
          const words = new PathWords(pieces, timing, 0.1);
          const got = [];
          for (let at = 0, i = 0; at < ids.length; i++) {
            const n = cuts[i % cuts.length]!;
            got.push(...words.push({ ids: Int32Array.from(ids.slice(at, at + n)), firstFrame: at, blank: BLANK }));
            at += n;
          }
          got.push(...words.flush());
          expect(got).toEqual(whole);
        },
      ),
      { numRuns: 300, seed: 11 },
    );
  });
});
