/** Exotel AgentStream adapter: snake_case, string sample_rate, raw 16-bit PCM, 100 ms outbound chunks. */
import { describe, expect, it } from 'vitest';
import { CarrierFrameError } from '../../../../src/telephony/carriers/contract.js';
import { createExotelAdapter } from '../../../../src/telephony/carriers/exotel.js';

// Fixtures written from Exotel's "WebSocket protocol" page for the Voicebot applet.
const sid = 'MZ0123456789abcdef0123456789abcdef';
const start = {
  event: 'start',
  sequence_number: '1',
  stream_sid: sid,
  start: {
    stream_sid: sid,
    call_sid: 'CA0123',
    account_sid: 'AC0123',
    from: '+919876543210',
    to: '+918047491899',
    custom_parameters: { token: 'tok', lang: 'bam' },
    media_format: { encoding: 'audio/x-raw', sample_rate: '16000', bit_rate: '16' },
  },
};
const media = { event: 'media', sequence_number: '3', stream_sid: sid, media: { chunk: '2', timestamp: '200', payload: 'AQIDBA==' } };
const parse = (a: ReturnType<typeof createExotelAdapter>, v: unknown) => a.parseText(JSON.stringify(v));

describe('exotel adapter', () => {
  it('parses connected, start, media, dtmf, mark, stop', () => {
    const a = createExotelAdapter();
    expect(parse(a, { event: 'connected' })).toEqual([{ type: 'connected' }]);
    expect(parse(a, start)).toEqual([
      {
        type: 'start',
        start: {
          callId: 'CA0123',
          streamId: sid,
          from: '+919876543210',
          to: '+918047491899',
          customParameters: { token: 'tok', lang: 'bam' },
          format: { codec: 'l16', sampleRate: 16000 },
        },
      },
    ]);
    const [m] = parse(a, media);
    expect(m?.type === 'media' && [...m.audio]).toEqual([1, 2, 3, 4]);
    expect(parse(a, { event: 'dtmf', sequence_number: '7', stream_sid: sid, dtmf: { digit: '5', duration: '100' } })).toEqual([{ type: 'dtmf', digit: '5' }]);
    expect(parse(a, { event: 'mark', sequence_number: '15', stream_sid: sid, mark: { name: 'm1' } })).toEqual([{ type: 'mark', name: 'm1' }]);
    expect(
      parse(a, { event: 'stop', sequence_number: '20', stream_sid: sid, stop: { call_sid: 'CA0123', account_sid: 'AC0123', reason: 'callended' } }),
    ).toEqual([{ type: 'stop', reason: 'callended' }]);
  });

  it('formats media, mark and clear with stream_sid, in 100 ms chunks (multiples of 320 bytes)', () => {
    const a = createExotelAdapter();
    const [s] = parse(a, start);
    if (s?.type !== 'start') throw new Error('no start');
    expect(a.frameBytes(s.start)).toBe(3200);
    const [s8] = parse(createExotelAdapter(), { ...start, start: { ...start.start, media_format: { encoding: 'audio/x-raw', sample_rate: '8000' } } });
    expect(s8?.type === 'start' && a.frameBytes(s8.start) % 320).toBe(0);
    expect(JSON.parse((a.media(new Uint8Array([1, 2])) as { text: string }).text)).toEqual({ event: 'media', stream_sid: sid, media: { payload: 'AQI=' } });
    expect(JSON.parse((a.mark('m1') as { text: string }).text)).toEqual({ event: 'mark', stream_sid: sid, mark: { name: 'm1' } });
    expect(JSON.parse((a.clear() as { text: string }).text)).toEqual({ event: 'clear', stream_sid: sid });
  });

  it.each([
    ['a numeric sample_rate', { ...start, start: { ...start.start, media_format: { encoding: 'audio/x-raw', sample_rate: 8000 } } }],
    ['a 24 kHz stream', { ...start, start: { ...start.start, media_format: { encoding: 'audio/x-raw', sample_rate: '24000' } } }],
    ['a missing call_sid', { ...start, start: { ...start.start, call_sid: undefined } }],
    ['PCM that is not whole samples', { ...media, media: { ...media.media, payload: 'AQID' } }],
    ['a numeric chunk', { ...media, media: { ...media.media, chunk: 2 } }],
  ])('rejects %s', (_what, frame) => {
    const a = createExotelAdapter();
    if ((frame as { event: string }).event === 'media') parse(a, start);
    expect(() => parse(a, frame)).toThrow(CarrierFrameError);
  });
});
