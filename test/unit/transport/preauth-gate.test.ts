/**
 * The caps on pre-auth WebSocket sockets (src/transport/preauth-gate.ts): in all, and per client address,
 * where an IPv6 address counts by its /64 and an IPv4-mapped one as its IPv4 address; a place given back
 * twice counts once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addressKey, PreAuthGate } from '../../../src/transport/preauth-gate.js';

describe('PreAuthGate', () => {
  it('refuses past the per-address cap, then past the total cap, and admits again once places come back', () => {
    const gate = new PreAuthGate({ maxSockets: 3, maxPerAddress: 2 });
    const a1 = gate.take('10.0.0.1');
    gate.take('10.0.0.1');
    expect(gate.refusal('10.0.0.1')).toBe('preauth_address_limit');
    expect(gate.refusal('10.0.0.2')).toBeNull();
    const b = gate.take('10.0.0.2');
    expect(gate.refusal('10.0.0.3')).toBe('preauth_limit');
    b();
    b(); // twice: still one place
    expect(gate.open).toBe(2);
    expect(gate.refusal('10.0.0.3')).toBeNull();
    a1();
    expect(gate.refusal('10.0.0.1')).toBeNull();
  });

  it('0 turns a cap off', () => {
    const gate = new PreAuthGate({ maxSockets: 0, maxPerAddress: 0 });
    for (let i = 0; i < 1000; i++) gate.take('10.0.0.1');
    expect(gate.refusal('10.0.0.1')).toBeNull();
  });

  it('groups IPv6 by /64 (as uWS writes it: eight uncompressed groups) and IPv4-mapped addresses as IPv4', () => {
    expect(addressKey('127.0.0.1')).toBe('127.0.0.1');
    expect(addressKey('0000:0000:0000:0000:0000:ffff:7f00:0001')).toBe('127.0.0.1');
    expect(addressKey('2001:0db8:0001:0002:aaaa:bbbb:cccc:dddd')).toBe(addressKey('2001:db8:1:2::1'));
    expect(addressKey('2001:0db8:0001:0002:aaaa:bbbb:cccc:dddd')).not.toBe(addressKey('2001:db8:1:3::1'));
    expect(addressKey('not an address')).toBe('not an address');
  });

  it('property: whatever the order of takes and gives, open equals the places held and no address passes its cap', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 3 })), { maxLength: 200 }), (steps) => {
        const gate = new PreAuthGate({ maxSockets: 5, maxPerAddress: 2 });
        const held: { address: string; give: () => void }[] = [];
        for (const [take, n] of steps) {
          const address = `10.0.0.${n}`;
          if (take && gate.refusal(address) === null) held.push({ address, give: gate.take(address) });
          else if (!take && held.length > 0) held.splice(n % held.length, 1)[0]!.give();
          expect(gate.open).toBe(held.length);
          expect(held.length).toBeLessThanOrEqual(5);
          for (let i = 0; i < 4; i++) expect(held.filter((h) => h.address === `10.0.0.${i}`).length).toBeLessThanOrEqual(2);
        }
      }),
    );
  });
});
