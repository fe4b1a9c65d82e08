/** Vonage WebSocket adapter: websocket:connected → start, binary L16 both ways, notify as mark, clear. */
import { describe, expect, it } from 'vitest';
import { CarrierFrameError } from '../../../../src/telephony/carriers/contract.js';
import { createVonageAdapter } from '../../../../src/telephony/carriers/vonage.js';

// Fixture written from Vonage's "WebSockets" guide: custom NCCO headers arrive at the top level.
const connected = {
  event: 'websocket:connected',
  'content-type': 'audio/l16;rate=16000',
  token: 'tok',
  uuid: 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee',
  meta: { tier: 1 },
};
const parse = (a: ReturnType<typeof createVonageAdapter>, v: unknown) => a.parseText(JSON.stringify(v));

describe('vonage adapter', () => {
  it('starts the call at websocket:connected, with the headers as custom parameters', () => {
    const [s] = parse(createVonageAdapter(), connected);
    expect(s).toEqual({
      type: 'start',
      start: {
        callId: connected.uuid,
        streamId: connected.uuid,
        customParameters: { token: 'tok', uuid: connected.uuid, meta: '{"tier":1}' },
        format: { codec: 'l16', sampleRate: 16000 },
      },
    });
    const [s8] = parse(createVonageAdapter(), { event: 'websocket:connected', 'content-type': 'audio/l16;rate=8000' });
    expect(s8?.type === 'start' && s8.start.format).toEqual({ codec: 'l16', sampleRate: 8000 });
    expect(s8?.type === 'start' && s8.start.callId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('takes binary L16 frames as media and sends 640-byte binary frames at 16 kHz', () => {
    const a = createVonageAdapter();
    const [s] = parse(a, connected);
    if (s?.type !== 'start') throw new Error('no start');
    const frame = new Uint8Array(640).fill(7);
    expect(a.parseBinary(frame)).toEqual([{ type: 'media', audio: frame }]);
    expect(a.frameBytes(s.start)).toBe(640);
    expect(a.media(frame)).toEqual({ binary: frame });
  });

  it('marks with notify (echoed as websocket:notify) and clears with the clear action', () => {
    const a = createVonageAdapter();
    expect(JSON.parse((a.mark('m1') as { text: string }).text)).toEqual({ action: 'notify', payload: { name: 'm1' } });
    expect(JSON.parse((a.clear() as { text: string }).text)).toEqual({ action: 'clear' });
    expect(parse(a, { event: 'websocket:notify', payload: { name: 'm1' } })).toEqual([{ type: 'mark', name: 'm1' }]);
    expect(parse(a, { event: 'websocket:notify', payload: { other: 1 } })[0]?.type).toBe('ignored');
    expect(parse(a, { event: 'websocket:cleared' })[0]?.type).toBe('ignored');
    expect(parse(a, { event: 'websocket:dtmf', digit: '9', duration: 260 })).toEqual([{ type: 'dtmf', digit: '9' }]);
  });

  it.each([
    ['another content type', { event: 'websocket:connected', 'content-type': 'audio/l16;rate=24000' }],
    ['no content type', { event: 'websocket:connected' }],
    ['a notify without payload', { event: 'websocket:notify' }],
    ['an unknown event', { event: 'websocket:media' }],
    ['Twilio framing', { event: 'media', media: { payload: 'AA==' } }],
  ])('rejects %s', (_what, frame) => {
    expect(() => parse(createVonageAdapter(), frame)).toThrow(CarrierFrameError);
  });

  it('rejects binary audio that is not whole 16-bit samples', () => {
    expect(() => createVonageAdapter().parseBinary(new Uint8Array(641))).toThrow(CarrierFrameError);
  });
});
