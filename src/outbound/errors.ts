/**
 * The outbound allow-list's errors: a URL Kuma will not open a connection to, and an operator's allow-list
 * entry that cannot be read. Only src/api/ maps them to HTTP (a 400 naming the URL's field); the config
 * refuses a bad KUMA_OUTBOUND_ALLOW at start.
 */

/** Why an outbound URL was refused (outbound-policy.ts). */
export type OutboundFailure = 'bad_url' | 'bad_scheme' | 'not_allowed_host' | 'private_address' | 'unresolvable';

export class OutboundRefusedError extends Error {
  constructor(
    readonly code: OutboundFailure,
    /** Says which rule refused and what to do about it; names the host, never resolver internals. */
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'OutboundRefusedError';
  }
}

/** An entry of KUMA_OUTBOUND_ALLOW that is neither a host name, a wildcard, an address nor a CIDR range. */
export class OutboundPolicyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboundPolicyError';
  }
}
