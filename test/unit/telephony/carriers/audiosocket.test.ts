/** AudioSocket adapter: TLV frames from a TCP byte stream split or coalesced anywhere. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AudioSocketKind, audioSocketFrame, createAudioSocketAdapter } from '../../../../src/telephony/carriers/audiosocket.js';
import { CarrierFrameError, type CarrierInbound } from '../../../../src/telephony/carriers/contract.js';

const UUID = '0f4c3a2e-1b6d-4e8f-9a0b-1c2d3e4f5a6b';
const uuidFrame = audioSocketFrame(AudioSocketKind.uuid, Buffer.from(UUID.replace(/-/g, ''), 'hex'));
const audio = (bytes: number, fill = 1) => audioSocketFrame(AudioSocketKind.audio, new Uint8Array(bytes).fill(fill));
const concat = (parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

/** Feeds `stream` cut at `cuts` (sorted offsets) and returns every event. */
function feed(stream: Uint8Array, cuts: number[]): CarrierInbound[] {
  const adapter = createAudioSocketAdapter();
  const events: CarrierInbound[] = [];
  let at = 0;
  for (const cut of [...cuts, stream.length]) {
    events.push(...adapter.parseBinary(stream.subarray(at, cut)));
    at = cut;
  }
  return events;
}

/** A valid AudioSocket stream: the UUID, then any mix of audio (whole samples), DTMF, and a final hangup or error. */
const validStream = fc
  .tuple(
    fc.array(
      fc.oneof(
        fc.integer({ min: 0, max: 400 }).map((n) =>
          audioSocketFrame(
            AudioSocketKind.audio,
            new Uint8Array(n * 2).map((_, i) => (i * 7 + n) & 0xff),
          ),
        ),
        fc.constantFrom(...'0123456789*#ABCD').map((d) => audioSocketFrame(AudioSocketKind.dtmf, Buffer.from(d))),
      ),
      { maxLength: 20 },
    ),
    fc.oneof(
      fc.constant(audioSocketFrame(AudioSocketKind.hangup)),
      fc.uint8Array({ maxLength: 4 }).map((code) => audioSocketFrame(AudioSocketKind.error, code)),
    ),
  )
  .map(([body, end]) => concat([uuidFrame, ...body, end]));

describe('audiosocket adapter', () => {
  it('reads the UUID as the call start (L16 8 kHz), audio, DTMF and hangup', () => {
    const events = feed(
      concat([uuidFrame, audio(320), audioSocketFrame(AudioSocketKind.dtmf, Buffer.from('5')), audioSocketFrame(AudioSocketKind.hangup)]),
      [],
    );
    expect(events).toEqual([
      { type: 'start', start: { callId: UUID, streamId: UUID, customParameters: {}, format: { codec: 'l16', sampleRate: 8000 } } },
      { type: 'media', audio: new Uint8Array(320).fill(1) },
      { type: 'dtmf', digit: '5' },
      { type: 'stop', reason: 'hangup' },
    ]);
  });

  it('ends the call on an error frame, with its code as the reason', () => {
    expect(feed(audioSocketFrame(AudioSocketKind.error, new Uint8Array([0x02])), [])).toEqual([{ type: 'stop', reason: 'error 0x02' }]);
  });

  it('holds a partial frame until the rest arrives', () => {
    const adapter = createAudioSocketAdapter();
    const stream = concat([uuidFrame, audio(320)]);
    expect(adapter.parseBinary(stream.subarray(0, 20))).toEqual([expect.objectContaining({ type: 'start' })]);
    expect(adapter.parseBinary(stream.subarray(20, 21))).toEqual([]);
    expect(adapter.parseBinary(stream.subarray(21))).toEqual([{ type: 'media', audio: new Uint8Array(320).fill(1) }]);
  });

  it("does not alias the caller's buffer (a reused read buffer cannot change delivered audio)", () => {
    const adapter = createAudioSocketAdapter();
    const buffer = audio(4, 9);
    const [event] = adapter.parseBinary(buffer);
    buffer.fill(0);
    expect(event?.type === 'media' && [...event.audio]).toEqual([9, 9, 9, 9]);
  });

  it('formats outbound audio as 0x10 frames of 320 bytes and hangs up with 0x00', () => {
    const adapter = createAudioSocketAdapter();
    const [start] = adapter.parseBinary(uuidFrame);
    if (start?.type !== 'start') throw new Error('no start');
    expect(adapter.frameBytes(start.start)).toBe(320);
    expect(adapter.media(new Uint8Array(320).fill(3))).toEqual({ binary: audio(320, 3) });
    expect(adapter.mark('m')).toBeNull();
    expect(adapter.clear()).toBeNull();
    expect(adapter.hangup()).toEqual([{ binary: new Uint8Array([0x00, 0x00, 0x00]) }]);
  });

  it.each([
    ['an unknown kind', new Uint8Array([0x42, 0, 0])],
    ['a short UUID', audioSocketFrame(AudioSocketKind.uuid, new Uint8Array(15))],
    ['audio that is not whole samples', audio(3)],
    ['a DTMF frame that is not a digit', audioSocketFrame(AudioSocketKind.dtmf, Buffer.from('x'))],
  ])('rejects %s, and stays failed (the stream is out of step)', (_what, bytes) => {
    const adapter = createAudioSocketAdapter();
    expect(() => adapter.parseBinary(bytes)).toThrow(CarrierFrameError);
    expect(() => adapter.parseBinary(audio(2))).toThrow(CarrierFrameError);
  });

  it('rejects text frames', () => {
    expect(() => createAudioSocketAdapter().parseText('hello')).toThrow(CarrierFrameError);
  });

  it('property: any split or coalescing of a valid stream yields the same events as feeding it whole', () => {
    fc.assert(
      fc.property(
        validStream.chain((stream) => fc.tuple(fc.constant(stream), fc.uniqueArray(fc.integer({ min: 0, max: stream.length }), { maxLength: 30 }))),
        ([stream, cuts]) => {
          expect(
            feed(
              stream,
              [...cuts].sort((a, b) => a - b),
            ),
          ).toEqual(feed(stream, []));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: an arbitrary byte stream, arbitrarily split, throws nothing but CarrierFrameError', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 20 }), (chunks) => {
        const adapter = createAudioSocketAdapter();
        for (const chunk of chunks) {
          try {
            adapter.parseBinary(chunk);
          } catch (err) {
            expect(err).toBeInstanceOf(CarrierFrameError);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});
