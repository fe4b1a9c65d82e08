/** parseClientEvent's audio check: every valid base64 text is taken as the bytes it encodes; corrupted text is refused. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AudioScratch, parseClientEvent } from '../../../../src/api/realtime/client-events.js';

const append = (audio: string) => JSON.stringify({ type: 'input_audio_buffer.append', audio });

describe('input_audio_buffer.append audio', () => {
  it('takes any valid base64 as exactly the bytes it encodes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), (bytes) => {
        const event = parseClientEvent(append(Buffer.from(bytes).toString('base64')), false);
        expect(event.kind).toBe('append');
        expect(Buffer.from((event as { audio: Uint8Array }).audio).equals(Buffer.from(bytes))).toBe(true);
      }),
    );
  });

  it('decodes into a reused scratch buffer the same bytes, frame after frame, small and large', () => {
    const scratch = new AudioScratch();
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 3000 }), { maxLength: 8 }), (frames) => {
        for (const bytes of frames) {
          const event = parseClientEvent(append(Buffer.from(bytes).toString('base64')), false, scratch) as { audio: Uint8Array };
          expect(Buffer.from(event.audio).equals(Buffer.from(bytes))).toBe(true);
        }
      }),
    );
    const large = new Uint8Array(AudioScratch.MAX_REUSED + 3).fill(7);
    expect(
      Buffer.from((parseClientEvent(append(Buffer.from(large).toString('base64')), false, scratch) as { audio: Uint8Array }).audio).equals(Buffer.from(large)),
    ).toBe(true);
    expect(() => parseClientEvent(append('AA*A'), false, scratch)).toThrow(/not valid base64/);
  });

  it('refuses base64 with a character outside the alphabet, a misplaced "=" or a length that is not a multiple of 4', () => {
    const corrupt = fc
      .tuple(fc.uint8Array({ minLength: 1, maxLength: 600 }), fc.nat(), fc.constantFrom('*', ' ', '\n', '=', '.', 'é', '%'))
      .map(([bytes, at, bad]) => {
        const text = Buffer.from(bytes).toString('base64');
        const i = at % text.length;
        // Replacing a character keeps the length a multiple of 4; '=' is only wrong before the padding.
        return text.slice(0, i) + bad + text.slice(i + 1);
      })
      .filter((text) => !/^[A-Za-z0-9+/]*={0,2}$/.test(text));
    fc.assert(
      fc.property(corrupt, (text) => {
        expect(() => parseClientEvent(append(text), false)).toThrow(/not valid base64/);
      }),
    );
    for (const text of ['A', 'AAAAA', 'A===', 'AA=A', '====']) expect(() => parseClientEvent(append(text), false)).toThrow(/not valid base64/);
  });
});
