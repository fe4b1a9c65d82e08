/**
 * The session input decoder: the 16 kHz output does not depend on where the client split its bytes (odd
 * bytes of pcm16 included), for every input format; and the transcript deltas are append-only.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InputDecoder } from '../../../src/realtime/input-decoder.js';
import type { InputFormat } from '../../../src/realtime/session-config.js';
import { TranscriptDeltas } from '../../../src/realtime/transcript-deltas.js';

const RUNS = Number(process.env.KUMA_PROPERTY_RUNS ?? 25);

async function decodeAll(format: InputFormat, bytes: Uint8Array, cuts: number[]): Promise<Float32Array> {
  const decoder = await InputDecoder.create(format);
  const parts: Float32Array[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    parts.push(decoder.decode(bytes.subarray(at, Math.max(at, cut))).slice()); // a view, valid until the next decode()
    at = Math.max(at, cut);
  }
  decoder.close();
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

const FORMATS: InputFormat[] = [
  { codec: 'pcm16', rate: 24000 },
  { codec: 'pcm16', rate: 16000 },
  { codec: 'g711_ulaw', rate: 8000 },
  { codec: 'g711_alaw', rate: 8000 },
];

describe('InputDecoder', () => {
  it.each(FORMATS)('$codec at $rate: any chunking, 1-byte chunks and odd splits included, gives the same samples', async (format) => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 0, maxLength: 3000 }), fc.array(fc.nat(3000), { maxLength: 40 }), async (bytes, rawCuts) => {
        const whole = await decodeAll(format, bytes, []);
        const cuts = rawCuts.map((c) => c % (bytes.length + 1)).sort((a, b) => a - b);
        expect(await decodeAll(format, bytes, cuts)).toEqual(whole);
      }),
      { numRuns: RUNS, seed: 17 },
    );
    const bytes = new Uint8Array(999).map((_, i) => (i * 37) & 255);
    expect(
      await decodeAll(
        format,
        bytes,
        Array.from({ length: 998 }, (_, i) => i + 1),
      ),
    ).toEqual(await decodeAll(format, bytes, []));
  });

  it('pcm16 little-endian samples come out at their value (16 kHz: no resampling)', async () => {
    const decoder = await InputDecoder.create({ codec: 'pcm16', rate: 16000 });
    expect(Array.from(decoder.decode(Uint8Array.of(0x00, 0x80, 0xff, 0x7f, 0x01)))).toEqual([-1, 32767 / 32768]);
    expect(Array.from(decoder.decode(Uint8Array.of(0x00)))).toEqual([1 / 32768]);
    expect(decoder.receivedMs).toBeCloseTo(3 / 16);
    decoder.close();
  });

  it('24 kHz in → two thirds as many 16 kHz samples out (less the filter tail)', async () => {
    const decoder = await InputDecoder.create({ codec: 'pcm16', rate: 24000 });
    const out = decoder.decode(new Uint8Array(48_000));
    expect(Math.abs(out.length - 16_000)).toBeLessThan(64);
    decoder.close();
  });
});

describe('TranscriptDeltas', () => {
  it('deltas are append-only and end with the final transcript when the hypotheses grow by words', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<string>('i', 'ni', 'ce', 'a', 'sogoma', 'hakɛto'), { minLength: 0, maxLength: 12 }),
        fc.array(fc.nat(12)),
        (words, stops) => {
          const deltas = new TranscriptDeltas();
          let sent = '';
          // Interim hypotheses: growing prefixes whose last word may be cut short.
          for (const n of stops.map((s) => Math.min(s, words.length)).sort((a, b) => a - b)) {
            const cut = words.slice(0, n);
            if (cut.length) cut[cut.length - 1] = cut.at(-1)!.slice(0, 1);
            sent += deltas.interim(cut.join(' '));
          }
          sent += deltas.final(words.join(' '));
          expect(sent).toBe(words.join(' '));
        },
      ),
      { numRuns: RUNS * 8, seed: 3 },
    );
  });

  it('a final decode that revises a sent word sends nothing more (completed carries the truth)', () => {
    const deltas = new TranscriptDeltas();
    expect(deltas.interim('i ni ce a')).toBe('i ni ce');
    expect(deltas.final('i na ce a')).toBe('');
    expect(deltas.text).toBe('i ni ce');
  });
});
