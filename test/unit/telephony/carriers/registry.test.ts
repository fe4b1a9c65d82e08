/** The carrier registry: every carrier by its path name, a fresh adapter per call. */
import { describe, expect, it } from 'vitest';
import { carrierNames, createCarrierAdapter, isCarrierName, websocketCarrierNames } from '../../../../src/telephony/carriers/index.js';

describe('carrier registry', () => {
  it('knows the six carriers, five of them over WebSocket', () => {
    expect([...carrierNames].sort()).toEqual(['audiosocket', 'exotel', 'plivo', 'telnyx', 'twilio', 'vonage']);
    expect(websocketCarrierNames).not.toContain('audiosocket');
    expect(websocketCarrierNames).toHaveLength(5);
  });

  it('creates a fresh adapter named after its carrier each time', () => {
    for (const name of carrierNames) {
      const a = createCarrierAdapter(name);
      expect(a.carrier).toBe(name);
      expect(createCarrierAdapter(name)).not.toBe(a);
    }
  });

  it('tells carrier names from other strings (including inherited property names)', () => {
    expect(isCarrierName('twilio')).toBe(true);
    expect(isCarrierName('toString')).toBe(false);
    expect(isCarrierName('sip')).toBe(false);
  });
});
