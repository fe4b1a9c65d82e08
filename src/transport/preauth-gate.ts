/**
 * The caps on pre-auth WebSocket sockets: those a route opens before it knows who the caller is (a carrier
 * stream whose call token comes in its start message). Such a socket costs memory before anyone can be
 * held to account for it, so there is a cap on how many are open at once in all, and from one client
 * address. A socket takes its place at the upgrade and gives it back once authenticated or closed.
 *
 * An address is the TCP peer's; IPv6 addresses are grouped by their /64 (one host usually holds a whole
 * /64), and IPv4-mapped IPv6 addresses count as the IPv4 address. Behind a proxy every client has the
 * proxy's address: raise the per-address cap there (0 turns it off).
 */
import ipaddr from 'ipaddr.js';
import { ApiError } from '../api/errors.js';

export interface PreAuthLimits {
  /** Pre-auth sockets open at once on this server; 0 = no cap. */
  maxSockets: number;
  /** Pre-auth sockets open at once from one address (IPv6: one /64); 0 = no cap. */
  maxPerAddress: number;
}

export type PreAuthRefusal = 'preauth_limit' | 'preauth_address_limit';

export class PreAuthGate {
  private total = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(private readonly limits: PreAuthLimits) {}

  get open(): number {
    return this.total;
  }

  /** Why a socket from `address` cannot open now, or null when it can. */
  refusal(address: string): PreAuthRefusal | null {
    const { maxSockets, maxPerAddress } = this.limits;
    if (maxSockets > 0 && this.total >= maxSockets) return 'preauth_limit';
    if (maxPerAddress > 0 && (this.byAddress.get(addressKey(address)) ?? 0) >= maxPerAddress) return 'preauth_address_limit';
    return null;
  }

  /** Takes a place for a socket from `address` (check `refusal` first); returns the function that gives it back, once. */
  take(address: string): () => void {
    const key = addressKey(address);
    this.total++;
    this.byAddress.set(key, (this.byAddress.get(key) ?? 0) + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.total--;
      const left = this.byAddress.get(key)! - 1;
      if (left === 0) this.byAddress.delete(key);
      else this.byAddress.set(key, left);
    };
  }
}

/** The HTTP answer to an upgrade refused by a cap: 503 when the server is full, 429 when the address is. */
export function preAuthRefusalError(refusal: PreAuthRefusal): ApiError {
  return refusal === 'preauth_limit'
    ? new ApiError('service_unavailable', 'Too many WebSocket connections are waiting to authenticate; retry shortly.', { headers: { 'retry-after': '1' } })
    : new ApiError('rate_limit_exceeded', 'Too many WebSocket connections from this address are waiting to authenticate; retry shortly.', {
        type: 'requests',
        headers: { 'retry-after': '1' },
      });
}

/** The address a cap counts: IPv4 as is, IPv6 by its /64. */
export function addressKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${(parsed as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}
