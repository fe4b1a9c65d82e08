/**
 * encodeSpeech with an AudioChunker (the native streaming TTS's chunk_size): the bytes come out in chunks of
 * exactly the layout's size (the last may be shorter), their concatenation is the unchunked stream, and
 * what the chunker still holds is not counted as delivered — a consumer that leaves after N chunks is
 * charged at most the characters those N chunks' audio speaks.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeSpeech, type PcmChunk, type SpeechTally } from '../../../src/voice/speech-stream.js';
import { AudioChunker, chunkLayout } from '../../../src/voice/audio-chunks.js';

const RATE = 24000; // the wav format's own rate: no resampling, so samples map to bytes exactly

async function* phrase(seconds: number, characters: number): AsyncGenerator<PcmChunk> {
  yield { samples: new Float32Array(Math.round(seconds * RATE)).map((_, i) => 0.3 * Math.sin(i / 5)), sampleRate: RATE, characters };
}

async function collect(chunks: AsyncGenerator<Uint8Array>, take = Infinity): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const chunk of chunks) {
    out.push(chunk);
    if (out.length >= take) break;
  }
  return out;
}

describe('encodeSpeech with a chunker', () => {
  it('wav chunks are the layout size, the first with the header; together they are the unchunked stream', async () => {
    const layout = chunkLayout('wav', 0.5);
    const chunked = await collect(encodeSpeech(phrase(2.3, 100), 'wav', { charactersDelivered: 0, bytesDelivered: 0 }, new AudioChunker(layout)));
    const plain = await collect(encodeSpeech(phrase(2.3, 100), 'wav', { charactersDelivered: 0, bytesDelivered: 0 }));
    expect(chunked.map((c) => c.length)).toEqual([44 + 24000, 24000, 24000, 24000, 14400]);
    expect(Buffer.concat(chunked)).toEqual(Buffer.concat(plain));
  });

  it('a consumer that leaves after n chunks is charged at most what those chunks speak', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(0.1, 0.3, 0.5, 1), fc.integer({ min: 1, max: 3 }), async (chunkSeconds, n) => {
        const tally: SpeechTally = { charactersDelivered: 0, bytesDelivered: 0 };
        const stream = encodeSpeech(phrase(4, 400), 'wav', tally, new AudioChunker(chunkLayout('wav', chunkSeconds)));
        // Taking chunk n+1 is what confirms chunk n was delivered (the consumer came back for more).
        await collect(stream, n + 1);
        const spokenSeconds = n * chunkSeconds;
        expect(tally.charactersDelivered).toBeLessThanOrEqual(Math.floor((400 * spokenSeconds) / 4));
      }),
      { numRuns: 12 },
    );
  });

  it('a stream that ends is charged every character', async () => {
    const tally: SpeechTally = { charactersDelivered: 0, bytesDelivered: 0 };
    await collect(encodeSpeech(phrase(1.7, 90), 'ulaw_8k', tally, new AudioChunker(chunkLayout('ulaw_8k', 0.5))));
    expect(tally.charactersDelivered).toBe(90);
  });
});

describe('chunkLayout', () => {
  it('mp3: whole 144-byte frames, at least one; ulaw_8k one byte a sample; wav_8k two', () => {
    expect(chunkLayout('mp3', 1).chunkBytes).toBe(42 * 144);
    expect(chunkLayout('mp3', 0.01).chunkBytes).toBe(144);
    expect(chunkLayout('ulaw_8k', 0.25)).toEqual({ headerBytes: 0, chunkBytes: 2000, byteRate: 8000 });
    expect(chunkLayout('wav_8k', 0.25)).toEqual({ headerBytes: 44, chunkBytes: 4000, byteRate: 16000 });
  });
});
