/**
 * The encoder pool changes where encoding runs, never what it produces: for every pooled format, random
 * PCM (speech-like, with out-of-range values, NaN and infinities mixed in), random lengths, random slice
 * boundaries and the sequence pushed several times, the pool's output of each push is the in-thread
 * encoder's output of the same push — byte for byte (Ogg serials, random per stream, set to 0 on both
 * sides). The three formats run at once on a two-worker pool, so streams share workers while compared.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { EncoderPool } from '../../../../src/codecs/encode-pool/encoder-pool.js';
import { createPooledEncoder } from '../../../../src/codecs/encode-pool/pooled-encoder.js';
import { POOLED_FORMATS } from '../../../../src/codecs/encode-pool/shared-pool.js';
import { createInThreadEncoder } from '../../../../src/codecs/encoders/in-thread.js';
import type { SpeechFormat, StreamingEncoder } from '../../../../src/codecs/types.js';
import { speechLikeSignal, withOggSerialZero } from '../encoders/codec-test-utils.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 25);
const FORMATS = [...POOLED_FORMATS];
const pool = new EncoderPool({ size: 2, warmFormats: FORMATS });
afterAll(() => pool.close());

interface Case {
  rate: number;
  pcm: Float32Array;
  /** Slice lengths, cycled until the PCM is used up. */
  cuts: number[];
  repeats: number;
}

/** Each push's output, then the flush's. */
async function encodeWith(encoder: StreamingEncoder, c: Case): Promise<Uint8Array[]> {
  const outputs: Uint8Array[] = [];
  try {
    for (let r = 0; r < c.repeats; r++) {
      for (let offset = 0, i = 0; offset < c.pcm.length; i++) {
        const length = c.cuts[i % c.cuts.length]!;
        outputs.push(await encoder.push(c.pcm.subarray(offset, offset + length)));
        offset += length;
      }
    }
    outputs.push(await encoder.flush());
  } finally {
    encoder.close();
  }
  return outputs;
}

const normalise = (format: SpeechFormat, bytes: Uint8Array): Uint8Array => (format === 'opus' && bytes.length > 0 ? withOggSerialZero(bytes) : bytes);

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    rate: fc.constantFrom(16000, 22050, 24000),
    samples: fc.integer({ min: 0, max: 30000 }),
    seed: fc.integer({ min: 1, max: 1_000_000 }),
    oddValues: fc.array(fc.tuple(fc.nat(), fc.constantFrom(Number.NaN, Infinity, -Infinity, 1.5, -3, 1, -1, 0)), { maxLength: 5 }),
    cuts: fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 8 }),
    repeats: fc.integer({ min: 1, max: 3 }),
  })
  .map(({ rate, samples, seed, oddValues, cuts, repeats }) => {
    const pcm = speechLikeSignal(samples / rate, rate, seed).slice(0, samples);
    for (const [at, value] of oddValues) if (pcm.length > 0) pcm[at % pcm.length] = value;
    return { rate, pcm, cuts, repeats };
  });

describe('encoder pool output', () => {
  it('is byte-identical to in-thread encoding, push by push, for every pooled format', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        await Promise.all(
          FORMATS.map(async (format) => {
            const [pooled, direct] = await Promise.all([
              encodeWith(await createPooledEncoder(pool, format, { inputRate: c.rate }), c),
              encodeWith(await createInThreadEncoder(format, { inputRate: c.rate }), c),
            ]);
            expect(
              pooled.map((b) => b.length),
              format,
            ).toEqual(direct.map((b) => b.length));
            for (let i = 0; i < pooled.length; i++) expect(normalise(format, pooled[i]!), `${format} output ${i}`).toEqual(normalise(format, direct[i]!));
          }),
        );
      }),
      { numRuns: RUNS, seed: 16 },
    );
    // Every stream was flushed and closed: nothing is left in the workers.
    expect(pool.stats().streams).toBe(0);
    expect(await pool.workerEncoders()).toBe(0);
  }, 120_000);
});
