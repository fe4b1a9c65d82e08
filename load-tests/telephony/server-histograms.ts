/**
 * The server's own view of a level, from GET /metrics: a Prometheus histogram's cumulative bucket counts,
 * scraped before and after, and the bucket bound under which p % of the observations between the two fell
 * (a histogram gives bounds, not exact percentiles: "≤ 300" means somewhere in the bucket ending at 300 ms).
 */

export type Buckets = Map<number, number>;

/** The cumulative bucket counts of histogram `name` (upper bound in seconds → count). */
export async function scrapeHistogram(baseUrl: string, name: string): Promise<Buckets> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const buckets: Buckets = new Map();
  const pattern = new RegExp(`^${name}_bucket\\{(?:[^}]*,)?le="([^"]+)"[^}]*\\} (\\S+)`, 'gm');
  for (const m of text.matchAll(pattern)) {
    const bound = m[1] === '+Inf' ? Infinity : Number(m[1]);
    buckets.set(bound, (buckets.get(bound) ?? 0) + Number(m[2]));
  }
  return buckets;
}

/** Observations between two scrapes. */
export function observations(before: Buckets, after: Buckets): number {
  return (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
}

/** "≤ 150" (ms): the first bucket bound holding p % of the observations between the scrapes; "—" when none. */
/** The upper bound (ms) of the bucket holding the p-th percentile: the percentile is at most this. NaN when empty. */
export function bucketUpperMs(before: Buckets, after: Buckets, p: number): number {
  const total = observations(before, after);
  if (total <= 0) return Number.NaN;
  for (const bound of [...after.keys()].sort((a, b) => a - b)) {
    if ((after.get(bound)! - (before.get(bound) ?? 0)) / total >= p / 100) return bound * 1000;
  }
  return Number.NaN;
}

export function bucketPercentile(before: Buckets, after: Buckets, p: number): string {
  const total = observations(before, after);
  if (total <= 0) return '—';
  const bounds = [...after.keys()].sort((a, b) => a - b);
  for (const bound of bounds) {
    if ((after.get(bound)! - (before.get(bound) ?? 0)) / total >= p / 100)
      return bound === Infinity ? `> ${Math.round(bounds.at(-2)! * 1000)}` : `≤ ${Math.round(bound * 1000)}`;
  }
  return '—';
}
