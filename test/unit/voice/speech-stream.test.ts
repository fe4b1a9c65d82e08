/**
 * encodeSpeech's billing tally: a consumer that leaves after taking some bytes is charged the characters
 * its delivered audio speaks — in proportion within a phrase, rounded down, never more than the bytes it
 * accepted can carry and never less than that minus the encoder's declared lag — and a stream that ends
 * is charged every phrase. The audio inside a byte prefix is measured from the format itself: PCM bytes,
 * MP3 frames (48 kbps CBR at 24 kHz: 144 bytes per 576 samples, 1105 samples of priming), Ogg/Opus
 * granule positions.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeSpeech, type PcmChunk, type SpeechTally } from '../../../src/voice/speech-stream.js';
import { encoderLagSamples } from '../../../src/voice/phrase-encoder.js';
import { formatInfo } from '../../../src/codecs/formats.js';
import { closeSharedAacPool } from '../../../src/codecs/encoders/ffmpeg-aac-pool.js';

const RATE = 16000; // what the demo voices speak at
const SLICE = RATE / 10; // encodeSpeech's slice
afterAll(() => closeSharedAacPool());

interface Phrase {
  samples: number;
  characters: number;
}

async function* source(phrases: readonly Phrase[]): AsyncGenerator<PcmChunk> {
  for (const p of phrases) {
    const samples = new Float32Array(p.samples).map((_, i) => 0.3 * Math.sin(i / 5) * Math.sin(i / 800));
    yield { samples, sampleRate: RATE, characters: p.characters };
  }
}

/** Input samples (at RATE) of content that a prefix of the encoded stream carries. */
const contentIn: Record<'pcm' | 'mp3' | 'opus', (bytes: Uint8Array) => number> = {
  pcm: (b) => (Math.floor(b.length / 2) * RATE) / 24000,
  mp3: (b) => ((Math.floor(b.length / 144) * 576 - 1105) * RATE) / 24000,
  opus: (b) => {
    let at = 0;
    let granule = 0;
    let preSkip = 0;
    while (at + 27 <= b.length) {
      const segments = b[at + 26]!;
      if (at + 27 + segments > b.length) break;
      let size = 27 + segments;
      for (let i = 0; i < segments; i++) size += b[at + 27 + i]!;
      if (at + size > b.length) break; // an incomplete page carries nothing a player can use
      const view = new DataView(b.buffer, b.byteOffset + at);
      if (at === 0) preSkip = new DataView(b.buffer, b.byteOffset + 27 + segments).getUint16(10, true);
      granule = Math.max(granule, Number(view.getBigInt64(6, true)));
      at += size;
    }
    return ((granule - preSkip) * RATE) / 48000;
  },
};

/** Characters whose audio lies within the first `covered` samples: whole phrases, then the share of one. */
function charactersWithin(phrases: readonly Phrase[], covered: number): number {
  let start = 0;
  let total = 0;
  for (const p of phrases) {
    if (covered >= start + p.samples) total += p.characters;
    else if (covered > start) return total + Math.floor((p.characters * (covered - start)) / p.samples);
    else return total;
    start += p.samples;
  }
  return total;
}

/** Pulls `pulls` items (each pull after the first accepts the previous item), then leaves. */
async function consume(phrases: readonly Phrase[], format: 'pcm' | 'mp3' | 'opus', pulls: number) {
  const tally: SpeechTally = { charactersDelivered: 0, bytesDelivered: 0 };
  const stream = encodeSpeech(source(phrases), format, tally);
  const accepted: Uint8Array[] = [];
  let previous: Uint8Array | undefined;
  let finished = false;
  for (let i = 0; i < pulls; i++) {
    const next = await stream.next();
    if (previous) accepted.push(previous);
    if (next.done) {
      finished = true;
      break;
    }
    previous = next.value;
  }
  await stream.return(undefined);
  const bytes = new Uint8Array(accepted.reduce((n, a) => n + a.length, 0));
  accepted.reduce((at, a) => (bytes.set(a, at), at + a.length), 0);
  return { tally, bytes, finished };
}

const phrasesArb = fc.array(fc.record({ samples: fc.integer({ min: 800, max: 40_000 }), characters: fc.integer({ min: 1, max: 80 }) }), {
  minLength: 1,
  maxLength: 5,
});

describe('encodeSpeech: what a consumer that leaves is charged', () => {
  for (const format of ['pcm', 'mp3', 'opus'] as const) {
    it(`${format}: between the characters of the audio accepted less the encoder lag, and those of the audio accepted`, async () => {
      const lag = encoderLagSamples(formatInfo(format), RATE);
      await fc.assert(
        fc.asyncProperty(phrasesArb, fc.integer({ min: 1, max: 400 }), async (phrases, pulls) => {
          const { tally, bytes, finished } = await consume(phrases, format, pulls);
          const total = phrases.reduce((n, p) => n + p.characters, 0);
          if (finished) {
            expect(tally.charactersDelivered).toBe(total);
            return;
          }
          const covered = Math.max(0, contentIn[format](bytes));
          expect(tally.bytesDelivered).toBe(bytes.length);
          expect(tally.charactersDelivered).toBeLessThanOrEqual(charactersWithin(phrases, covered));
          expect(tally.charactersDelivered).toBeGreaterThanOrEqual(charactersWithin(phrases, covered - lag - SLICE));
        }),
        { seed: 11_2026, numRuns: 60 },
      );
    });
  }

  it('a client that takes most of a one-phrase stream and leaves before its end pays for most of it (was 0)', async () => {
    const phrases = [{ samples: RATE * 4, characters: 39 }]; // ≈ 24 kB of mp3, like the 20 kB client
    const { tally, bytes } = await consume(phrases, 'mp3', 30);
    expect(bytes.length).toBeGreaterThan(15_000);
    expect(tally.charactersDelivered).toBeGreaterThan(0);
    expect(tally.charactersDelivered).toBeLessThanOrEqual(charactersWithin(phrases, contentIn.mp3(bytes)));
  });

  it('a source that fails midway: what was synthesized is flushed out and charged, then the error goes on', async () => {
    const tally: SpeechTally = { charactersDelivered: 0, bytesDelivered: 0 };
    async function* failing(): AsyncGenerator<PcmChunk> {
      yield* source([
        { samples: 12_345, characters: 17 },
        { samples: 8000, characters: 9 },
      ]);
      throw new Error('synthesis failed midway');
    }
    const out: Uint8Array[] = [];
    await expect(
      (async () => {
        for await (const b of encodeSpeech(failing(), 'mp3', tally)) out.push(b);
      })(),
    ).rejects.toThrow(/midway/);
    expect(tally.charactersDelivered).toBe(26);
    // The flushed stream carries every synthesized sample (MP3 only counts whole frames: length is enough).
    const all = new Uint8Array(out.reduce((n, b) => n + b.length, 0));
    expect(contentIn.mp3(all)).toBeGreaterThanOrEqual(12_345 + 8000);
  });
});
