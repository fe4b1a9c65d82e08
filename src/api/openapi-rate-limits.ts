/**
 * The rate-limit part of the OpenAPI document: the `x-ratelimit-*` headers every authenticated response
 * can carry, and `Retry-After` on a 429. Described once under components.headers and referenced from each
 * response of an authenticated operation.
 */
type JsonObject = Record<string, unknown>;

const DURATION = 'A duration as OpenAI writes it (Go format): `120ms`, `1s`, `1.5s`, `6m0s`.';

const DIMENSIONS = {
  requests: 'requests per minute',
  tokens: 'per-minute amount (seconds of audio, characters or tokens, as billed)',
} as const;

/** components.headers: name → header object. */
export function rateLimitHeaderComponents(): JsonObject {
  const headers: JsonObject = {};
  for (const [name, what] of Object.entries(DIMENSIONS)) {
    const scope = `The tighter of the key's and the account's limits on ${what}; absent when neither is limited.`;
    headers[`x-ratelimit-limit-${name}`] = { description: `Limit. ${scope}`, schema: { type: 'string', pattern: '^\\d+$' } };
    headers[`x-ratelimit-remaining-${name}`] = {
      description: `What is left of it after this request was admitted. ${scope}`,
      schema: { type: 'string', pattern: '^\\d+$' },
    };
    headers[`x-ratelimit-reset-${name}`] = { description: `Time until it is whole again. ${DURATION}`, schema: { type: 'string' } };
  }
  headers['retry-after'] = { description: 'Whole seconds to wait before retrying.', schema: { type: 'string', pattern: '^\\d+$' } };
  return headers;
}

/** The `headers` of one response of an authenticated operation (with Retry-After on a 429). */
export function rateLimitResponseHeaders(status: number): JsonObject {
  const names = Object.keys(DIMENSIONS).flatMap((d) => ['limit', 'remaining', 'reset'].map((part) => `x-ratelimit-${part}-${d}`));
  if (status === 429) names.push('retry-after');
  return Object.fromEntries(names.map((n) => [n, { $ref: `#/components/headers/${n}` }]));
}
