/**
 * GatedVadStream: the batch scorer's energy gate over one stream. Whatever the push sizes, it gives the same
 * probabilities as the whole audio scored as one batch of one with the same floor; on speech alone (no quiet
 * windows) the same numbers as the ungated VadStream; and digital silence costs the model almost nothing.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SileroVad } from '../../../../src/engines/vad/silero-vad.js';
import { GatedVadStream } from '../../../../src/engines/vad/gated-stream.js';
import { speakDemo } from '../../../../models/generator/demo-voice.js';

let vad: SileroVad;
beforeAll(async () => {
  vad = await SileroVad.load({ intraOpThreads: 1, interOpThreads: 1 });
});
afterAll(() => vad.close());

function audio(): Float32Array {
  const phrase = speakDemo('n bɛ taa sugu la sini', 16000).samples;
  const out = new Float32Array(16000 + phrase.length + 24000 + phrase.length + 8000);
  out.set(phrase, 16000);
  out.set(phrase, 16000 + phrase.length + 24000);
  return out;
}

async function scoreInPieces(samples: Float32Array, sizes: number[]): Promise<number[]> {
  const stream = vad.gatedStream();
  const out: number[] = [];
  let at = 0;
  for (let i = 0; at < samples.length; i++) {
    const n = sizes.length ? sizes[i % sizes.length]! : samples.length;
    out.push(...(await stream.push(samples.subarray(at, at + n))));
    at += n;
  }
  return out;
}

describe('GatedVadStream', () => {
  it('gives the same probabilities whatever the push sizes', async () => {
    const samples = audio();
    const whole = await scoreInPieces(samples, []);
    expect(whole.length).toBe(Math.floor(samples.length / 512));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 9000 }), { minLength: 1, maxLength: 5 }), async (sizes) => {
        expect(await scoreInPieces(samples, sizes)).toEqual(whole);
      }),
      { numRuns: 8 },
    );
  });

  it('scores speech as the ungated stream does (the gate only resets the state to settled silence), and silence between phrases as 0', async () => {
    const samples = audio();
    const gated = await scoreInPieces(samples, [320]);
    const plain = Array.from(await vad.stream().push(samples));
    // Within the first phrase: the same speech/silence decision in every window, and nearly the same probability
    // (the gated silence before it left Silero in its settled-silence state, not in the state zeros lead to).
    const phraseWindows = Math.floor(speakDemo('n bɛ taa sugu la sini', 16000).samples.length / 512);
    const first = Math.ceil(16000 / 512);
    for (let w = first; w < first + phraseWindows; w++) {
      expect(gated[w]! >= 0.5).toBe(plain[w]! >= 0.5);
      expect(Math.abs(gated[w]! - plain[w]!)).toBeLessThan(0.05);
    }
    // Most of the 1.5 s gap after the first phrase is gated to exactly 0.
    const gapStart = first + phraseWindows + 15;
    expect(gated.slice(gapStart, gapStart + 20).every((p) => p === 0)).toBe(true);
  });

  it('costs the model a few windows for a minute of digital silence', async () => {
    let modelWindows = 0;
    const counting = {
      scoreBatch: async (...args: Parameters<SileroVad['scoreBatch']>) => {
        const r = await vad.scoreBatch(...args);
        modelWindows += r.modelWindows;
        return r;
      },
    };
    const stream = new GatedVadStream(counting);
    const probs = await stream.push(new Float32Array(16000 * 60));
    expect(probs.length).toBe(1875);
    expect(modelWindows).toBeLessThan(10);
  });
});
