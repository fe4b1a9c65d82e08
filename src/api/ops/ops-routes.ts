/**
 * Operational endpoints, unauthenticated and outside the API prefixes: liveness, readiness (not ready
 * until every dependency reports ready, e.g. models loaded and warmed), and Prometheus metrics.
 */
import type { Metrics } from '../../observability/metrics.js';
import type { RouteDef } from '../types.js';

export type ReadinessCheck = () => Promise<{ name: string; ready: boolean; detail?: string }>;

export function opsRoutes(metrics: Metrics, readinessChecks: ReadinessCheck[]): RouteDef[] {
  return [
    {
      method: 'GET',
      path: '/healthz',
      surface: 'ops',
      auth: false,
      handler: async () => ({ kind: 'json', body: { status: 'ok' } }),
    },
    {
      method: 'GET',
      path: '/readyz',
      surface: 'ops',
      auth: false,
      handler: async () => {
        const checks = await Promise.all(
          readinessChecks.map((check) => check().catch((err: Error) => ({ name: 'check', ready: false, detail: err.message }))),
        );
        const ready = checks.every((c) => c.ready);
        return { kind: 'json', status: ready ? 200 : 503, body: { status: ready ? 'ready' : 'not_ready', checks } };
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      surface: 'ops',
      auth: false,
      handler: async () => {
        const { contentType, body } = await metrics.render();
        return { kind: 'text', contentType, body };
      },
    },
  ];
}
