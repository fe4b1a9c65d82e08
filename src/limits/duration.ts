/**
 * Durations as OpenAI writes them in `x-ratelimit-reset-*` headers (Go's time.Duration format, which the
 * SDKs and client libraries parse): `120ms`, `1s`, `1.5s`, `6m0s`, `1h0m0s`.
 */

/** Formats whole milliseconds (a fraction is rounded up: a reset is never announced early). */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms));
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const millis = total % 60_000;
  // Seconds with up to three decimals and no trailing zeros: 1500 → "1.5", 1000 → "1".
  const seconds = (millis / 1000).toFixed(3).replace(/\.?0+$/, '');
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

/** Parses what formatDuration writes (and Go's other unit spellings used by OpenAI), in ms; NaN when malformed. */
export function parseDuration(text: string): number {
  const unitMs: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, µs: 0.001, ns: 1e-6 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return Number.NaN;
  return parts.reduce((sum, p) => sum + Number(p[1]) * unitMs[p[2]!]!, 0);
}
