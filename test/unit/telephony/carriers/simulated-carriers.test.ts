/**
 * The simulated carriers (test/helpers/carriers) against Kuma's adapters, both written from the carriers'
 * docs independently: what a simulated carrier sends, an adapter reads back to the same call start and the
 * same audio bytes; what an adapter formats, the simulated carrier reads as audio, marks and clears with no
 * protocol error, and its mark echoes and clear acknowledgements are frames the adapter understands.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCarrierAdapter, type CarrierName } from '../../../../src/telephony/carriers/index.js';
import type { CarrierAdapter, CarrierFrame, CarrierInbound } from '../../../../src/telephony/carriers/contract.js';
import { audioSocketDialect } from '../../../helpers/carriers/audiosocket.js';
import { exotelDialect } from '../../../helpers/carriers/exotel.js';
import { plivoDialect } from '../../../helpers/carriers/plivo.js';
import type { CarrierDialect, WireFrame } from '../../../helpers/carriers/simulated-call.js';
import { telnyxDialect } from '../../../helpers/carriers/telnyx.js';
import { twilioDialect } from '../../../helpers/carriers/twilio.js';
import { vonageDialect } from '../../../helpers/carriers/vonage.js';

const dialects: [CarrierName, () => CarrierDialect, Record<string, string>][] = [
  ['twilio', () => twilioDialect({ customParameters: { token: 'tok' } }), { token: 'tok' }],
  ['telnyx', () => telnyxDialect({ customParameters: { token: 'tok' } }), { token: 'tok' }],
  ['telnyx', () => telnyxDialect({ codec: 'PCMA', streamAuthToken: 'tok' }), { token: 'tok' }],
  ['plivo', () => plivoDialect({ extraHeaders: { token: 'tok' } }), { token: 'tok' }],
  ['plivo', () => plivoDialect({ format: { codec: 'l16', sampleRate: 16000 }, extraHeaders: { token: 'tok' } }), { token: 'tok' }],
  ['exotel', () => exotelDialect({ customParameters: { token: 'tok' } }), { token: 'tok' }],
  ['exotel', () => exotelDialect({ sampleRate: 16000, customParameters: { token: 'tok' } }), { token: 'tok' }],
  ['vonage', () => vonageDialect({ headers: { token: 'tok' } }), { token: 'tok' }],
  ['vonage', () => vonageDialect({ sampleRate: 8000, headers: { token: 'tok' } }), { token: 'tok' }],
  ['audiosocket', () => audioSocketDialect(), {}],
];

const toAdapter = (adapter: CarrierAdapter, f: WireFrame): CarrierInbound[] => ('text' in f ? adapter.parseText(f.text) : adapter.parseBinary(f.binary));
const toDialect = (f: CarrierFrame): WireFrame => f;

function opened(name: CarrierName, dialect: CarrierDialect) {
  const adapter = createCarrierAdapter(name);
  const events = dialect.opening().flatMap((f) => toAdapter(adapter, f));
  const start = events.find((e) => e.type === 'start');
  if (start?.type !== 'start') throw new Error(`${name}: no start`);
  return { adapter, events, start: start.start };
}

describe.each(dialects)('simulated %s ↔ adapter', (name, makeDialect, parameters) => {
  it('opening → start in the simulated format, with the token where the carrier carries it', () => {
    const dialect = makeDialect();
    const { start, adapter } = opened(name, dialect);
    expect(start.format).toEqual(dialect.format);
    expect(start.customParameters).toMatchObject(parameters);
    expect(adapter.outboundFormat(start)).toEqual(dialect.format);
  });

  it('caller audio round-trips byte for byte; DTMF and the closing come through', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 400 }), (raw) => {
        const dialect = makeDialect();
        const { adapter } = opened(name, dialect);
        const bytes = dialect.format.codec === 'l16' ? raw.subarray(0, raw.length & ~1) : raw;
        const events = toAdapter(adapter, dialect.media(bytes, 0));
        const audio = Buffer.concat(events.flatMap((e) => (e.type === 'media' ? [e.audio] : [])));
        expect(audio.equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 50 },
    );
    const dialect = makeDialect();
    const { adapter } = opened(name, dialect);
    expect(toAdapter(adapter, dialect.dtmf('7'))).toEqual([{ type: 'dtmf', digit: '7' }]);
    const closing = dialect.closing().flatMap((f) => toAdapter(adapter, f));
    expect(closing.every((e) => e.type === 'stop')).toBe(true);
  });

  it('outbound audio, marks and clears read back exactly, and the echoes parse as marks', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 2, maxLength: 320 }), fc.string({ minLength: 1, maxLength: 24 }), (raw, markName) => {
        const dialect = makeDialect();
        const { adapter, start } = opened(name, dialect);
        // A whole outbound frame, as the core sends them (Exotel and Vonage require whole frames).
        const frame = new Uint8Array(adapter.frameBytes(start));
        frame.set(raw.subarray(0, frame.length));
        expect(dialect.read(toDialect(adapter.media(frame)))).toEqual([{ kind: 'audio', bytes: frame }]);

        const mark = adapter.mark(markName);
        if (mark === null) return;
        const [read] = dialect.read(toDialect(mark));
        if (read?.kind !== 'mark') throw new Error('not a mark');
        expect(read.name).toBe(markName);
        expect(toAdapter(adapter, read.echo)).toEqual([{ type: 'mark', name: markName }]);

        const clear = adapter.clear();
        if (clear === null) return;
        const [cleared] = dialect.read(toDialect(clear));
        if (cleared?.kind !== 'clear') throw new Error('not a clear');
        if (cleared.ack) expect(toAdapter(adapter, cleared.ack).every((e) => e.type === 'ignored')).toBe(true);
      }),
      { numRuns: 50 },
    );
  });

  it('the hangup frames, if any, are read by the simulated carrier as a hangup', () => {
    const dialect = makeDialect();
    const { adapter } = opened(name, dialect);
    for (const f of adapter.hangup()) expect(dialect.read(toDialect(f))).toEqual([{ kind: 'hangup' }]);
  });
});
