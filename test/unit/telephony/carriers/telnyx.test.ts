/** Telnyx media streaming adapter: snake_case names, string sequence numbers, PCMU/PCMA only. */
import { describe, expect, it } from 'vitest';
import { CarrierFrameError } from '../../../../src/telephony/carriers/contract.js';
import { createTelnyxAdapter } from '../../../../src/telephony/carriers/telnyx.js';

// Fixtures written from Telnyx's "Media Streaming over WebSockets" / streaming_start pages.
const connected = { event: 'connected', version: '1.0.0' };
const start = {
  event: 'start',
  sequence_number: '1',
  start: {
    user_id: '3e6f995f-85f7-4705-9741-53b116d28237',
    call_control_id: 'v3:MdI91X4lWFEs7IgbBEOT9M4AigoY08M0WWZFISt1Yw2axZ_IiE4pqg',
    client_state: 'aGF2ZSBhIG5pY2UgZGF5ID1d',
    from: '+13122010094',
    to: '+13122123456',
    media_format: { encoding: 'PCMA', sample_rate: 8000, channels: 1 },
  },
  stream_id: '32de0dea-53cb-4b21-89a4-9e1819c043bc',
};
const media = { event: 'media', sequence_number: '4', media: { track: 'inbound', chunk: '2', timestamp: '5', payload: 'AAEC' }, stream_id: start.stream_id };
const stop = {
  event: 'stop',
  sequence_number: '5',
  stop: { user_id: start.start.user_id, call_control_id: start.start.call_control_id },
  stream_id: start.stream_id,
};
const parse = (a: ReturnType<typeof createTelnyxAdapter>, v: unknown) => a.parseText(JSON.stringify(v));

describe('telnyx adapter', () => {
  it('parses the documented frames and takes the codec from media_format', () => {
    const a = createTelnyxAdapter();
    expect(parse(a, connected)).toEqual([{ type: 'connected' }]);
    const [s] = parse(a, start);
    expect(s).toEqual({
      type: 'start',
      start: {
        callId: start.start.call_control_id,
        streamId: start.stream_id,
        from: '+13122010094',
        to: '+13122123456',
        customParameters: {},
        format: { codec: 'pcma', sampleRate: 8000 },
      },
    });
    const [m] = parse(a, media);
    expect(m?.type === 'media' && [...m.audio]).toEqual([0, 1, 2]);
    expect(parse(a, { ...media, media: { ...media.media, track: 'outbound' } })[0]?.type).toBe('ignored');
    expect(parse(a, { event: 'dtmf', stream_id: start.stream_id, occurred_at: '2024-01-01T00:00:00Z', sequence_number: '6', dtmf: { digit: '#' } })).toEqual([
      { type: 'dtmf', digit: '#' },
    ]);
    expect(parse(a, { event: 'mark', sequence_number: '7', stream_id: start.stream_id, mark: { name: 'm1' } })).toEqual([{ type: 'mark', name: 'm1' }]);
    expect(
      parse(a, { event: 'error', sequence_number: '8', stream_id: start.stream_id, payload: { code: 100002, title: 'Unknown error', detail: 'x' } })[0]?.type,
    ).toBe('ignored');
    expect(parse(a, stop)).toEqual([{ type: 'stop' }]);
  });

  it('collects custom parameters given as a list or an object, and the stream auth token as the call token', () => {
    const listed = createTelnyxAdapter();
    const [s1] = parse(listed, {
      ...start,
      start: {
        ...start.start,
        custom_parameters: [
          { name: 'token', value: 't1' },
          { name: 'n', value: 2 },
        ],
      },
    });
    expect(s1?.type === 'start' && s1.start.customParameters).toEqual({ token: 't1', n: '2' });
    const authed = createTelnyxAdapter();
    parse(authed, { ...connected, 'x-telnyx-streaming-auth-token': 't2' });
    const [s2] = parse(authed, { ...start, start: { ...start.start, custom_parameters: { relay_url: 'wss://a.example' } } });
    expect(s2?.type === 'start' && s2.start.customParameters).toEqual({ relay_url: 'wss://a.example', token: 't2' });
  });

  it('formats media, mark and clear with Telnyx names and answers in the call codec', () => {
    const a = createTelnyxAdapter();
    const [s] = parse(a, start);
    if (s?.type !== 'start') throw new Error('no start');
    expect(a.outboundFormat(s.start)).toEqual({ codec: 'pcma', sampleRate: 8000 });
    expect(a.frameBytes(s.start)).toBe(160);
    expect(JSON.parse((a.media(new Uint8Array([1, 2, 3])) as { text: string }).text)).toEqual({ event: 'media', media: { payload: 'AQID' } });
    expect(JSON.parse((a.mark('m1') as { text: string }).text)).toEqual({ event: 'mark', mark: { name: 'm1' } });
    expect(JSON.parse((a.clear() as { text: string }).text)).toEqual({ event: 'clear' });
  });

  it.each([
    ['an unsupported codec', { ...start, start: { ...start.start, media_format: { encoding: 'OPUS', sample_rate: 8000, channels: 1 } } }],
    ['L16 (big-endian RTP payload)', { ...start, start: { ...start.start, media_format: { encoding: 'L16', sample_rate: 16000, channels: 1 } } }],
    ['a string sample_rate', { ...start, start: { ...start.start, media_format: { encoding: 'PCMU', sample_rate: '8000' } } }],
    ['a missing stream_id', { ...start, stream_id: undefined }],
    ['a numeric sequence_number', { ...media, sequence_number: 4 }],
    ['invalid base64', { ...media, media: { ...media.media, payload: 'A' } }],
    ['an unknown event', { event: 'media_v2' }],
  ])('rejects %s', (_what, frame) => {
    expect(() => parse(createTelnyxAdapter(), frame)).toThrow(CarrierFrameError);
  });
});
