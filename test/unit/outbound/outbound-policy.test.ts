/**
 * The outbound allow-list: which URLs Kuma may connect to. The address rule is checked against a reference
 * written here from the IANA special-purpose registries (not from ipaddr.js), over generated IPv4 and IPv6
 * addresses; host matching, schemes and resolution use an injected lookup, so no test needs DNS.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OutboundPolicyError, OutboundRefusedError } from '../../../src/outbound/errors.js';
import { checkOutbound, parseOutboundPolicy, type LookupAll } from '../../../src/outbound/outbound-policy.js';

/** IANA IPv4 special-purpose blocks (plus multicast and 240/4): none of them is "public" for Kuma. */
const V4_SPECIAL: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.31.196.0', 24],
  ['192.52.193.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['192.175.48.0', 24],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const v4Int = (ip: string) => ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
const inV4Block = (ip: number, [base, bits]: [string, number]) => Math.floor(ip / 2 ** (32 - bits)) === Math.floor(v4Int(base) / 2 ** (32 - bits));
const v4Text = (n: number) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
const v4Public = (n: number) => !V4_SPECIAL.some((block) => inV4Block(n, block));

/** Global unicast is 2000::/3; inside it, these special-purpose blocks (Teredo/ORCHID/benchmarking…, documentation, 6to4, AS112, 3fff::/20). */
const V6_GLOBAL_SPECIAL: [number[], number][] = [
  [[0x2001, 0x0000], 23],
  [[0x2001, 0x0db8], 32],
  [[0x2002], 16],
  [[0x2620, 0x004f, 0x8000], 48],
  [[0x3fff], 20],
];
function v6Public(h: number[]): boolean {
  if (h[0]! >> 13 !== 1) return false;
  return !V6_GLOBAL_SPECIAL.some(([prefix, bits]) => {
    for (let i = 0; i * 16 < bits; i++) {
      const take = Math.min(16, bits - i * 16);
      if (h[i]! >> (16 - take) !== (prefix[i] ?? 0) >> (16 - take)) return false;
    }
    return true;
  });
}
const v6Text = (h: number[]) => h.map((x) => x.toString(16)).join(':');

const ANY = parseOutboundPolicy('*');
const noLookup: LookupAll = async () => {
  throw new Error('no DNS in this test');
};
const resolvesTo =
  (...addresses: string[]): LookupAll =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

async function refusal(url: string, policy = ANY, lookup: LookupAll = noLookup): Promise<string | null> {
  try {
    await checkOutbound(url, policy, lookup);
    return null;
  } catch (err) {
    if (!(err instanceof OutboundRefusedError)) throw err;
    return err.code;
  }
}

/** Uniform 32-bit addresses, and as many drawn from inside a special block (rare when uniform). */
const v4Arb = fc.oneof(
  fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  fc.tuple(fc.constantFrom(...V4_SPECIAL), fc.integer({ min: 0, max: 2 ** 32 - 1 })).map(([[base, bits], rnd]) => v4Int(base) + (rnd % 2 ** (32 - bits))),
);
const hextet = fc.integer({ min: 0, max: 0xffff });
const v6Arb = fc
  .tuple(
    fc.oneof(hextet, fc.constantFrom(0x2001, 0x2002, 0x2620, 0x3fff, 0x2a00, 0x2600, 0xfc00, 0xfd12, 0xfe80, 0xfec0, 0xff02, 0, 0x64)),
    fc.array(hextet, { minLength: 7, maxLength: 7 }),
  )
  .map(([first, rest]) => [first, ...rest]);

describe('the address rule (KUMA_OUTBOUND_ALLOW=*)', () => {
  it('accepts an IPv4 address exactly when it lies outside every IANA special-purpose block', async () => {
    await fc.assert(
      fc.asyncProperty(v4Arb, async (n) => {
        expect(await refusal(`https://${v4Text(n)}/app`)).toBe(v4Public(n) ? null : 'private_address');
      }),
      { numRuns: 2000 },
    );
  });

  it('judges an IPv4-mapped IPv6 address as the IPv4 address it carries', async () => {
    await fc.assert(
      fc.asyncProperty(v4Arb, async (n) => {
        expect(await refusal(`wss://[::ffff:${v4Text(n)}]/ws`)).toBe(v4Public(n) ? null : 'private_address');
      }),
      { numRuns: 1000 },
    );
  });

  it('accepts an IPv6 address exactly when it is global unicast outside the special blocks', async () => {
    await fc.assert(
      fc.asyncProperty(v6Arb, async (h) => {
        // Mapped addresses are the IPv4 rule's (tested above).
        fc.pre(!(h.slice(0, 5).every((x) => x === 0) && h[5] === 0xffff));
        expect(await refusal(`https://[${v6Text(h)}]/`)).toBe(v6Public(h) ? null : 'private_address');
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts a host name only when every address it resolves to is public', async () => {
    const address = fc.oneof(v4Arb.map(v4Text), v6Arb.map(v6Text));
    await fc.assert(
      fc.asyncProperty(fc.array(address, { minLength: 1, maxLength: 4 }), async (addresses) => {
        const allPublic = addresses.every((a) =>
          a.includes(':') ? v6Public(a.split(':').map((x) => parseInt(x, 16))) || isMappedPublic(a) : v4Public(v4Int(a)),
        );
        expect(await refusal('https://app.example.org/relay', ANY, resolvesTo(...addresses))).toBe(allPublic ? null : 'private_address');
      }),
      { numRuns: 500 },
    );
  });

  it('refuses the classic ways in: loopback, metadata, RFC 1918, CGNAT, numeric spellings, unspecified', async () => {
    for (const url of [
      'http://127.0.0.1/',
      'http://localhost.localdomain./',
      'http://169.254.169.254/latest/meta-data/',
      'http://10.1.2.3/',
      'http://172.31.0.1/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://0177.0.0.1/',
      'http://0.0.0.0/',
      'http://[::1]/',
      'http://[::]/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://[::ffff:169.254.169.254]/',
      'http://[64:ff9b::a00:1]/',
      'http://[2002:a00:1::]/',
    ]) {
      const lookup = url.includes('localhost') ? resolvesTo('127.0.0.1') : noLookup;
      expect(await refusal(url, ANY, lookup), url).toBe('private_address');
    }
  });
});

function isMappedPublic(text: string): boolean {
  const h = text.split(':').map((x) => parseInt(x, 16));
  return h.slice(0, 5).every((x) => x === 0) && h[5] === 0xffff && v4Public(h[6]! * 65536 + h[7]!);
}

describe('explicit listing', () => {
  it('lets a listed CIDR range or address through, private or not, and nothing beside it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 16 - 1 }), async (low) => {
        const policy = parseOutboundPolicy('10.20.0.0/16, 127.0.0.1');
        expect(await refusal(`ws://${v4Text(v4Int('10.20.0.0') + low)}:8080/`, policy)).toBeNull();
        expect(await refusal(`ws://${v4Text(v4Int('10.21.0.0') + low)}:8080/`, policy)).toBe('not_allowed_host');
      }),
      { numRuns: 200 },
    );
    expect(await refusal('http://127.0.0.1:9000/', parseOutboundPolicy('127.0.0.1'))).toBeNull();
    expect(await refusal('http://127.0.0.2/', parseOutboundPolicy('127.0.0.1'))).toBe('not_allowed_host');
    expect(await refusal('http://[::ffff:10.20.1.1]/', parseOutboundPolicy('10.20.0.0/16'))).toBeNull();
  });

  it('lets an exactly named host resolve to a private address; a wildcard does not', async () => {
    const policy = parseOutboundPolicy('bot.internal, *.example.com');
    const target = await checkOutbound('wss://bot.internal/ws', policy, resolvesTo('10.0.0.7'));
    expect(target).toMatchObject({ host: 'bot.internal', address: '10.0.0.7', family: 4 });
    expect(await refusal('wss://a.example.com/ws', policy, resolvesTo('10.0.0.7'))).toBe('private_address');
    expect(await refusal('wss://a.example.com/ws', policy, resolvesTo('93.184.215.14', '10.0.0.7'))).toBe('private_address');
    // ... unless the address is itself listed.
    expect(await refusal('wss://a.example.com/ws', parseOutboundPolicy('*.example.com, 10.0.0.0/24'), resolvesTo('10.0.0.7'))).toBeNull();
  });

  it('answers the first resolved address, to pin the connection to', async () => {
    const target = await checkOutbound(
      'https://app.example.com:8443/x?y=1',
      parseOutboundPolicy('app.example.com'),
      resolvesTo('2606:4700::1', '93.184.215.14'),
    );
    expect(target).toMatchObject({ host: 'app.example.com', address: '2606:4700::1', family: 6 });
    expect(target.url.port).toBe('8443');
  });
});

describe('host matching', () => {
  const policy = parseOutboundPolicy(' *.Example.com ,relay.partner.io. ');
  const pub = resolvesTo('93.184.215.14');

  it('matches a wildcard to subdomains at any depth, case-insensitively, not to the apex or look-alikes', async () => {
    for (const host of ['a.example.com', 'A.B.EXAMPLE.COM', 'x.example.com.']) expect(await refusal(`https://${host}/`, policy, pub), host).toBeNull();
    for (const host of ['example.com', 'badexample.com', 'example.com.evil.io', 'a.example.co']) {
      expect(await refusal(`https://${host}/`, policy, pub), host).toBe('not_allowed_host');
    }
  });

  it('matches a host name exactly (trailing dot and case aside)', async () => {
    expect(await refusal('https://RELAY.partner.io/', policy, pub)).toBeNull();
    expect(await refusal('https://relay.partner.io./', policy, pub)).toBeNull();
    expect(await refusal('https://x.relay.partner.io/', policy, pub)).toBe('not_allowed_host');
  });

  it('allows nothing with an empty list', async () => {
    for (const url of ['https://example.com/', 'https://93.184.215.14/', 'wss://[2606:4700::1]/']) {
      expect(await refusal(url, parseOutboundPolicy(''), pub), url).toBe('not_allowed_host');
    }
  });

  it('refuses other schemes, bad URLs and names that do not resolve', async () => {
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'gopher://example.com/'])
      expect(await refusal(url, ANY, pub), url).toBe('bad_scheme');
    for (const url of ['not a url', '/relative/path', '']) expect(await refusal(url, ANY, pub), url).toBe('bad_url');
    expect(await refusal('https://nowhere.example/', ANY, noLookup)).toBe('unresolvable');
    expect(await refusal('https://nowhere.example/', ANY, resolvesTo())).toBe('unresolvable');
  });

  it('gives reasons that name the rule but not the inner address a name resolved to', async () => {
    const err = await checkOutbound('https://a.example.com/', policy, resolvesTo('10.9.8.7')).catch((e: Error) => e);
    expect(err).toBeInstanceOf(OutboundRefusedError);
    expect((err as Error).message).toContain('KUMA_OUTBOUND_ALLOW');
    expect((err as Error).message).not.toContain('10.9.8.7');
  });
});

describe('parsing KUMA_OUTBOUND_ALLOW', () => {
  it('refuses entries that are not hosts, wildcards, addresses or ranges, naming them', () => {
    for (const bad of ['https://example.com', 'example.com:443', '10.0.0.0/33', 'exa mple.com', '*example.com', 'fd00::/129']) {
      expect(() => parseOutboundPolicy(`example.org,${bad}`), bad).toThrow(OutboundPolicyError);
      expect(() => parseOutboundPolicy(bad), bad).toThrow(bad);
    }
  });

  it('accepts the documented kinds of entry', () => {
    const policy = parseOutboundPolicy('*, *.example.com, relay.example.org, 203.0.113.9, 10.0.0.0/8, fd00::/8, [2001:db8::1]');
    expect(policy.anyPublicHost).toBe(true);
    expect([...policy.hosts]).toEqual(['relay.example.org']);
    expect(policy.domainSuffixes).toEqual(['.example.com']);
    expect(policy.ranges).toHaveLength(4);
  });
});
