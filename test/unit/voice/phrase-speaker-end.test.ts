/**
 * PhraseSpeaker's end while its consumer holds the drained audio: the consumer is suspended inside the
 * drain (it yielded the last words' bytes) when end() comes, so end()'s wake finds no consumer asleep. The
 * stream must still finish (the speech socket's `{"text": ""}` after a flush hung here until its inactivity
 * timeout, seen once in CI). Likewise for text said at that moment: it is spoken.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeSharedEncoderPool } from '../../../src/codecs/encode-pool/shared-pool.js';
import { PhraseSpeaker, type SpokenAudio } from '../../../src/voice/phrase-speaker.js';

afterAll(async () => {
  await closeSharedEncoderPool();
});

/** A voice that says half a second of tone per phrase. */
const engine = {
  async run<T>(): Promise<T> {
    const samples = Float32Array.from({ length: 8000 }, (_, i) => 0.2 * Math.sin(i / 5));
    return { samples, sampleRate: 16000 } as T;
  },
};

function speaker() {
  return new PhraseSpeaker({ engine, voice: {}, format: 'pcm', speakable: null, account: 'acct', signal: new AbortController().signal });
}

/** The next item, or 'hung' when none comes within 3 s. */
async function next(it: AsyncIterator<SpokenAudio>): Promise<IteratorResult<SpokenAudio> | 'hung'> {
  return Promise.race([it.next(), new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 3000))]);
}

/** Takes items until the one that completes the phrase (the drain's: the encoder's lookahead flushed). */
async function untilComplete(it: AsyncIterator<SpokenAudio>, characters: number): Promise<void> {
  for (;;) {
    const r = await next(it);
    if (r === 'hung' || r.done) throw new Error(`stream ended or hung before ${characters} characters were complete`);
    if (r.value.charactersComplete >= characters) return;
  }
}

describe('PhraseSpeaker: input that comes while the drained audio is held', () => {
  it('end() then: the stream finishes', async () => {
    const s = speaker();
    s.say({ text: 'i ni ce', characters: 7 });
    const it = s[Symbol.asyncIterator]();
    await untilComplete(it, 7);
    s.end();
    let r = await next(it);
    while (r !== 'hung' && !r.done) r = await next(it);
    expect(r).not.toBe('hung');
  });

  it('say() then: the new phrase is spoken', async () => {
    const s = speaker();
    s.say({ text: 'i ni ce', characters: 7 });
    const it = s[Symbol.asyncIterator]();
    await untilComplete(it, 7);
    s.say({ text: 'a ka kɛnɛ', characters: 9 });
    s.end();
    await untilComplete(it, 16);
  });
});
