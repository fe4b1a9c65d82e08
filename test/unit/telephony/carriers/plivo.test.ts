/** Plivo audio stream adapter: numeric sequence numbers, extra_headers, playAudio/checkpoint/clearAudio. */
import { describe, expect, it } from 'vitest';
import { CarrierFrameError } from '../../../../src/telephony/carriers/contract.js';
import { createPlivoAdapter, parseExtraHeaders } from '../../../../src/telephony/carriers/plivo.js';

// Fixtures written from Plivo's "Audio Streaming Protocol Reference".
const start = {
  event: 'start',
  sequenceNumber: 1,
  start: {
    callId: '12345678-1234-1234-1234-123456789abc',
    streamId: '87654321-4321-4321-4321-cba987654321',
    accountId: 'MAXXXXXXXXXXXXXXXXXX',
    tracks: ['inbound'],
    mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 },
  },
  extra_headers: 'token=abc123;tenant=t1',
};
const media = {
  event: 'media',
  sequenceNumber: 42,
  streamId: start.start.streamId,
  media: { track: 'inbound', timestamp: '1705312200000', chunk: 41, payload: '//8A' },
};
const parse = (a: ReturnType<typeof createPlivoAdapter>, v: unknown) => a.parseText(JSON.stringify(v));

describe('plivo adapter', () => {
  it('parses start (extra_headers → customParameters), media, dtmf, playedStream, clearedAudio', () => {
    const a = createPlivoAdapter();
    expect(parse(a, start)).toEqual([
      {
        type: 'start',
        start: {
          callId: start.start.callId,
          streamId: start.start.streamId,
          customParameters: { token: 'abc123', tenant: 't1' },
          format: { codec: 'pcmu', sampleRate: 8000 },
        },
      },
    ]);
    const [m] = parse(a, media);
    expect(m?.type === 'media' && [...m.audio]).toEqual([0xff, 0xff, 0x00]);
    expect(parse(a, { event: 'dtmf', sequenceNumber: 43, streamId: start.start.streamId, dtmf: { track: 'inbound', digit: '7' } })).toEqual([
      { type: 'dtmf', digit: '7' },
    ]);
    expect(parse(a, { event: 'playedStream', streamId: start.start.streamId, name: 'greeting' })).toEqual([{ type: 'mark', name: 'greeting' }]);
    expect(parse(a, { sequenceNumber: 0, event: 'clearedAudio', streamId: start.start.streamId })[0]?.type).toBe('ignored');
  });

  it('reads extraHeaders with either separator', () => {
    expect(parseExtraHeaders('a=1,b=2')).toEqual({ a: '1', b: '2' });
    expect(parseExtraHeaders('a=1;b=2')).toEqual({ a: '1', b: '2' });
    expect(parseExtraHeaders('')).toEqual({});
  });

  it('formats playAudio with the stream content type, checkpoint and clearAudio with the streamId', () => {
    const a = createPlivoAdapter();
    const [s] = parse(a, { ...start, start: { ...start.start, mediaFormat: { encoding: 'audio/x-l16', sampleRate: 16000 } } });
    if (s?.type !== 'start') throw new Error('no start');
    expect(a.outboundFormat(s.start)).toEqual({ codec: 'l16', sampleRate: 16000 });
    expect(a.frameBytes(s.start)).toBe(640);
    expect(JSON.parse((a.media(new Uint8Array([1, 2])) as { text: string }).text)).toEqual({
      event: 'playAudio',
      media: { contentType: 'audio/x-l16', sampleRate: 16000, payload: 'AQI=' },
    });
    expect(JSON.parse((a.mark('m1') as { text: string }).text)).toEqual({ event: 'checkpoint', streamId: start.start.streamId, name: 'm1' });
    expect(JSON.parse((a.clear() as { text: string }).text)).toEqual({ event: 'clearAudio', streamId: start.start.streamId });
  });

  it.each([
    ['a string sequenceNumber', { ...media, sequenceNumber: '42' }],
    ['a string chunk', { ...media, media: { ...media.media, chunk: '41' } }],
    ['μ-law at 16 kHz', { ...start, start: { ...start.start, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 16000 } } }],
    ['an unknown encoding', { ...start, start: { ...start.start, mediaFormat: { encoding: 'audio/opus', sampleRate: 8000 } } }],
    ['invalid base64', { ...media, media: { ...media.media, payload: '!!!!' } }],
    ['a playedStream without a name', { event: 'playedStream', streamId: 'x' }],
    ["Twilio's mark (not Plivo's protocol)", { event: 'mark', mark: { name: 'x' } }],
  ])('rejects %s', (_what, frame) => {
    expect(() => parse(createPlivoAdapter(), frame)).toThrow(CarrierFrameError);
  });
});
