/**
 * Metrics of webhook delivery (telephony call events), on the server's registry: events delivered, attempts
 * retried, events given up (with why) and events dropped before any attempt (with why). Queue depth is not
 * exported per call (unbounded label cardinality); the counters say whether receivers keep up.
 */
import { Counter } from 'prom-client';
import type { Metrics } from './metrics.js';

export type WebhookGiveUpReason = 'rejected' | 'attempts_exhausted' | 'refused_url' | 'shutdown';
export type WebhookDropReason = 'no_webhook' | 'superseded' | 'queue_full' | 'closed' | 'unserializable';

export interface WebhookMetrics {
  delivered: Counter;
  retried: Counter;
  givenUp: Counter<'reason'>;
  dropped: Counter<'reason' | 'type'>;
}

const byServer = new WeakMap<Metrics, WebhookMetrics>();

export function webhookMetrics(metrics: Metrics): WebhookMetrics {
  let m = byServer.get(metrics);
  if (!m) {
    const registers = [metrics.registry];
    m = {
      delivered: new Counter({ name: 'kuma_webhook_events_delivered_total', help: 'Webhook events a receiver acknowledged with 2xx.', registers }),
      retried: new Counter({ name: 'kuma_webhook_attempts_retried_total', help: 'Webhook attempts that failed and were scheduled again.', registers }),
      givenUp: new Counter({
        name: 'kuma_webhook_events_given_up_total',
        help: 'Webhook events abandoned after trying: rejected (4xx), attempts_exhausted, refused_url (outbound policy), shutdown.',
        labelNames: ['reason'] as const,
        registers,
      }),
      dropped: new Counter({
        name: 'kuma_webhook_events_dropped_total',
        help: 'Webhook events never attempted: no_webhook configured, superseded (a newer interim), queue_full, closed (sender stopped).',
        labelNames: ['reason', 'type'] as const,
        registers,
      }),
    };
    byServer.set(metrics, m);
  }
  return m;
}
