/** Twilio Media Streams adapter: the documented message order and field types in, the documented shapes out. */
import { describe, expect, it } from 'vitest';
import { CarrierFrameError } from '../../../../src/telephony/carriers/contract.js';
import { createTwilioAdapter } from '../../../../src/telephony/carriers/twilio.js';

// Fixtures written from Twilio's "Media Streams - WebSocket Messages" page: every number-like field a string.
const connected = { event: 'connected', protocol: 'Call', version: '1.0.0' };
const start = {
  event: 'start',
  sequenceNumber: '1',
  start: {
    accountSid: 'AC0123',
    streamSid: 'MZ18ad',
    callSid: 'CA5678',
    tracks: ['inbound'],
    mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
    customParameters: { token: 'tok.abc', relay_url: 'wss://app.example/relay' },
  },
  streamSid: 'MZ18ad',
};
const payload = Buffer.from([0xff, 0x7f, 0x00, 0x10]).toString('base64');
const media = { event: 'media', sequenceNumber: '3', media: { track: 'inbound', chunk: '1', timestamp: '5', payload }, streamSid: 'MZ18ad' };
const dtmf = { event: 'dtmf', streamSid: 'MZ18ad', sequenceNumber: '5', dtmf: { track: 'inbound_track', digit: '1' } };
const mark = { event: 'mark', sequenceNumber: '4', streamSid: 'MZ18ad', mark: { name: 'reply-1' } };
const stop = { event: 'stop', sequenceNumber: '5', streamSid: 'MZ18ad', stop: { accountSid: 'AC0123', callSid: 'CA5678' } };

const parse = (adapter: ReturnType<typeof createTwilioAdapter>, value: unknown) => adapter.parseText(JSON.stringify(value));

describe('twilio adapter', () => {
  it('parses connected, start, media, dtmf, mark, stop in the documented order', () => {
    const a = createTwilioAdapter();
    expect(parse(a, connected)).toEqual([{ type: 'connected' }]);
    expect(parse(a, start)).toEqual([
      {
        type: 'start',
        start: {
          callId: 'CA5678',
          streamId: 'MZ18ad',
          customParameters: { token: 'tok.abc', relay_url: 'wss://app.example/relay' },
          format: { codec: 'pcmu', sampleRate: 8000 },
        },
      },
    ]);
    const [m] = parse(a, media);
    expect(m?.type === 'media' && Buffer.from(m.audio)).toEqual(Buffer.from([0xff, 0x7f, 0x00, 0x10]));
    expect(parse(a, dtmf)).toEqual([{ type: 'dtmf', digit: '1' }]);
    expect(parse(a, mark)).toEqual([{ type: 'mark', name: 'reply-1' }]);
    expect(parse(a, stop)).toEqual([{ type: 'stop' }]);
  });

  it('ignores the outbound track (both_tracks streams) and accepts extra fields', () => {
    const a = createTwilioAdapter();
    expect(parse(a, { ...media, media: { ...media.media, track: 'outbound' } })).toEqual([{ type: 'ignored', detail: 'outbound track' }]);
    expect(parse(a, { ...mark, futureField: { x: 1 } })).toEqual([{ type: 'mark', name: 'reply-1' }]);
  });

  it('formats media, mark and clear with the streamSid from start', () => {
    const a = createTwilioAdapter();
    parse(a, start);
    const s = (parse(a, start)[0] as { start: any }).start;
    expect(a.outboundFormat(s)).toEqual({ codec: 'pcmu', sampleRate: 8000 });
    expect(a.frameBytes(s)).toBe(160);
    expect(JSON.parse((a.media(new Uint8Array([1, 2, 3])) as { text: string }).text)).toEqual({
      event: 'media',
      streamSid: 'MZ18ad',
      media: { payload: 'AQID' },
    });
    expect(JSON.parse((a.mark('m1') as { text: string }).text)).toEqual({ event: 'mark', streamSid: 'MZ18ad', mark: { name: 'm1' } });
    expect(JSON.parse((a.clear() as { text: string }).text)).toEqual({ event: 'clear', streamSid: 'MZ18ad' });
    expect(a.hangup()).toEqual([]);
  });

  it('accepts a media frame before start (the core decides what to do with it)', () => {
    expect(parse(createTwilioAdapter(), media)[0]?.type).toBe('media');
  });

  it.each([
    ['not JSON', '{"event":'],
    ['a JSON array', '[1,2]'],
    ['no event', '{"streamSid":"MZ"}'],
    ['an unknown event', '{"event":"dance"}'],
    ['a numeric sequenceNumber', JSON.stringify({ ...media, sequenceNumber: 3 })],
    ['a numeric chunk', JSON.stringify({ ...media, media: { ...media.media, chunk: 1 } })],
    ['a numeric timestamp', JSON.stringify({ ...media, media: { ...media.media, timestamp: 5 } })],
    ['a payload that is not base64', JSON.stringify({ ...media, media: { ...media.media, payload: 'ab$d' } })],
    ['a payload with a misplaced pad', JSON.stringify({ ...media, media: { ...media.media, payload: 'ab=cdefg' } })],
    ['a media without payload', JSON.stringify({ ...media, media: { track: 'inbound' } })],
    ['a start without callSid', JSON.stringify({ ...start, start: { ...start.start, callSid: undefined } })],
    ['a start in another encoding', JSON.stringify({ ...start, start: { ...start.start, mediaFormat: { encoding: 'audio/l16', sampleRate: 16000 } } })],
    ['a non-string custom parameter', JSON.stringify({ ...start, start: { ...start.start, customParameters: { token: 7 } } })],
    ['a dtmf that is not a digit', JSON.stringify({ ...dtmf, dtmf: { digit: 'x' } })],
    ['a mark without a name', JSON.stringify({ ...mark, mark: {} })],
  ])('rejects %s with a CarrierFrameError', (_what, text) => {
    expect(() => createTwilioAdapter().parseText(text)).toThrow(CarrierFrameError);
  });

  it('rejects binary frames', () => {
    expect(() => createTwilioAdapter().parseBinary(new Uint8Array([1]))).toThrow(CarrierFrameError);
  });

  it('names the offending field in the error', () => {
    expect(() => createTwilioAdapter().parseText(JSON.stringify({ ...media, media: { ...media.media, chunk: 1 } }))).toThrow(/media\.chunk/);
  });
});
