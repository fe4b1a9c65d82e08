/**
 * Where Kuma may open connections on a customer's behalf (relay WebSockets, webhooks, `play` fetches): the
 * operator's allow-list KUMA_OUTBOUND_ALLOW, and never an address inside the operator's network unless the
 * operator named it. A URL passes when its scheme is http(s)/ws(s), its host is on the list, and EVERY
 * address its name resolves to is public — or was listed explicitly (an exact host name, an address or a
 * CIDR range; `*` and `*.domain` wildcards cover public addresses only, since whoever controls a matching
 * name's DNS could otherwise point it inward). The answer names the address to connect to, so the caller can
 * pin it and a second resolution cannot be rebound to an inner address.
 */
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { OutboundPolicyError, OutboundRefusedError } from './errors.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

export interface OutboundPolicy {
  /** `*`: any host name or address, when every address it stands for is public. */
  anyPublicHost: boolean;
  /** Exact host names (lower case, no trailing dot): these may resolve to private addresses. */
  hosts: ReadonlySet<string>;
  /** From `*.example.com`: `.example.com`; matches its subdomains at any depth (not the apex), public addresses only. */
  domainSuffixes: readonly string[];
  /** Listed addresses (as /32 or /128) and CIDR ranges: allowed whatever range they lie in. */
  ranges: readonly [Address, number][];
}

/** Where to connect: the checked URL, its host name, and the vetted address to pin the connection to. */
export interface OutboundTarget {
  url: URL;
  host: string;
  address: string;
  family: 4 | 6;
}

export type LookupAll = (host: string) => Promise<{ address: string; family: number }[]>;

const systemLookup: LookupAll = (host) => dns.lookup(host, { all: true, verbatim: true });

/** A resolver that does not answer within this is treated as a name that does not resolve. */
const LOOKUP_TIMEOUT_MS = 5000;
const SCHEMES = new Set(['http:', 'https:', 'ws:', 'wss:']);
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;
const LIST_HINT = 'the outbound allow-list (KUMA_OUTBOUND_ALLOW)';

/** Parses KUMA_OUTBOUND_ALLOW (comma-separated); a bad entry throws OutboundPolicyError naming it. Empty = nothing allowed. */
export function parseOutboundPolicy(spec: string): OutboundPolicy {
  const hosts = new Set<string>();
  const domainSuffixes: string[] = [];
  const ranges: [Address, number][] = [];
  let anyPublicHost = false;
  for (const raw of spec.split(',')) {
    const entry = raw.trim().toLowerCase().replace(/\.$/, '');
    if (!entry) continue;
    const bare = entry.replace(/^\[(.*)\]$/, '$1');
    if (entry === '*') anyPublicHost = true;
    else if (entry.startsWith('*.') && HOST_NAME.test(entry.slice(2))) domainSuffixes.push(entry.slice(1));
    else if (entry.includes('/')) {
      try {
        ranges.push(ipaddr.parseCIDR(entry));
      } catch {
        throw new OutboundPolicyError(`the entry "${raw.trim()}" is not a CIDR range (e.g. 10.0.0.0/8, fd00::/8); entries are host names, not URLs`);
      }
    } else if (isIP(bare)) {
      const address = ipaddr.parse(bare);
      ranges.push([address, address.kind() === 'ipv4' ? 32 : 128]);
    } else if (HOST_NAME.test(entry)) hosts.add(entry);
    else {
      throw new OutboundPolicyError(`the entry "${raw.trim()}" is not a host name, *.domain wildcard, IP address, CIDR range or *`);
    }
  }
  return { anyPublicHost, hosts, domainSuffixes, ranges };
}

/** An IPv4-mapped IPv6 address is the IPv4 address it carries: the kernel connects to that. */
function unwrap(address: Address): Address {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : address;
}

/**
 * Public = routable on the internet: IPv4 outside every special-purpose range (loopback, RFC 1918, link-local
 * and its metadata service, CGNAT, multicast, reserved…); IPv6 only inside global unicast 2000::/3 and outside
 * its special ranges (6to4, Teredo and NAT64 prefixes embed IPv4 addresses that could be private).
 */
function isPublic(address: Address): boolean {
  if (address.range() !== 'unicast') return false;
  return address.kind() === 'ipv4' || ((address as ipaddr.IPv6).parts[0]! & 0xe000) === 0x2000;
}

function inListedRange(policy: OutboundPolicy, address: Address): boolean {
  return policy.ranges.some(([base, bits]) => {
    const candidate = base.kind() === 'ipv6' ? (address.kind() === 'ipv4' ? (address as ipaddr.IPv4).toIPv4MappedAddress() : address) : unwrap(address);
    return candidate.kind() === base.kind() && candidate.match(base, bits);
  });
}

/** The target to connect to, or OutboundRefusedError with the code and a reason the customer can act on. */
export async function checkOutbound(rawUrl: string, policy: OutboundPolicy, lookup: LookupAll = systemLookup): Promise<OutboundTarget> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new OutboundRefusedError('bad_url', `"${String(rawUrl).slice(0, 200)}" is not an absolute URL`);
  }
  if (!SCHEMES.has(url.protocol)) throw new OutboundRefusedError('bad_scheme', `the scheme ${url.protocol} is not allowed; use https, wss, http or ws`);
  // WHATWG parsing already turned 2130706433 or 0x7f.1 into 127.0.0.1; IPv6 literals keep their brackets.
  const host = url.hostname
    .replace(/^\[(.*)\]$/, '$1')
    .toLowerCase()
    .replace(/\.$/, '');

  if (isIP(host)) {
    const address = unwrap(ipaddr.parse(host));
    if (!inListedRange(policy, address)) {
      if (!policy.anyPublicHost) throw new OutboundRefusedError('not_allowed_host', `the address ${host} is not on ${LIST_HINT}`);
      if (!isPublic(address))
        throw new OutboundRefusedError('private_address', `${host} is a private or reserved address; it is allowed only when listed in ${LIST_HINT}`);
    }
    return { url, host, address: address.toString(), family: address.kind() === 'ipv4' ? 4 : 6 };
  }

  const named = policy.hosts.has(host);
  if (!named && !policy.anyPublicHost && !policy.domainSuffixes.some((suffix) => host.endsWith(suffix))) {
    throw new OutboundRefusedError('not_allowed_host', `the host ${host} is not on ${LIST_HINT}`);
  }
  let resolved: { address: string; family: number }[];
  let timer: NodeJS.Timeout | undefined;
  try {
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('lookup timed out')), LOOKUP_TIMEOUT_MS);
    });
    resolved = await Promise.race([lookup(host), deadline]);
  } catch {
    resolved = [];
  } finally {
    clearTimeout(timer);
  }
  const addresses = resolved.filter((r) => isIP(r.address)).map((r) => unwrap(ipaddr.parse(r.address)));
  if (!addresses.length) throw new OutboundRefusedError('unresolvable', `the host ${host} could not be resolved`);
  // Every address, not the first: a name with one public and one inner address must not be a way in.
  // The inner address itself is not named, so that the answer reveals nothing of the operator's network.
  if (!named && addresses.some((a) => !isPublic(a) && !inListedRange(policy, a))) {
    throw new OutboundRefusedError(
      'private_address',
      `the host ${host} resolves to a private or reserved address; list the host name or its range in ${LIST_HINT} to allow it`,
    );
  }
  const first = addresses[0]!;
  return { url, host, address: first.toString(), family: first.kind() === 'ipv4' ? 4 : 6 };
}
