/**
 * Who still calls the native surface (SPEC §9): requests per native route, served while deprecated or refused
 * 410 once retired. An operator reads this before moving `KUMA_RETIREMENT_DATE` (legacy model ids show up in
 * the usage records under their own model id instead).
 */
import { Counter } from 'prom-client';
import type { Metrics } from './metrics.js';

const byServer = new WeakMap<Metrics, Counter<'route' | 'outcome'>>();

export function nativeRequestsCounter(metrics: Metrics): Counter<'route' | 'outcome'> {
  let counter = byServer.get(metrics);
  if (!counter) {
    counter = new Counter({
      name: 'kuma_native_requests_total',
      help: 'Requests to the deprecated native surface by route (without its /api prefix) and outcome: served (deprecated, still answered) or retired (410).',
      labelNames: ['route', 'outcome'] as const,
      registers: [metrics.registry],
    });
    byServer.set(metrics, counter);
  }
  return counter;
}
