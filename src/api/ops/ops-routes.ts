/**
 * Operational endpoints, unauthenticated and outside the API prefixes: liveness, readiness (not ready
 * until every dependency reports ready, e.g. models loaded and warmed), and Prometheus metrics.
 */
import cluster from 'node:cluster';
import type { Metrics } from '../../observability/metrics.js';
import type { RouteDef } from '../types.js';
import { HealthSchema, ReadinessSchema } from '../schemas/ops.js';
import { jsonContent, textContent } from '../schemas/responses.js';

const TAGS = ['Operations'];

export type ReadinessCheck = () => Promise<{ name: string; ready: boolean; detail?: string }>;

export function opsRoutes(metrics: Metrics, readinessChecks: ReadinessCheck[]): RouteDef[] {
  return [
    {
      method: 'GET',
      path: '/healthz',
      surface: 'ops',
      auth: false,
      openapi: {
        operationId: 'getHealth',
        summary: 'Liveness: the process answers',
        tags: TAGS,
        responses: { 200: { description: 'Alive', content: [jsonContent(HealthSchema)] } },
      },
      handler: async () => ({ kind: 'json', body: { status: 'ok', pid: process.pid, ...(cluster.worker ? { worker: cluster.worker.id } : {}) } }),
    },
    {
      method: 'GET',
      path: '/readyz',
      surface: 'ops',
      auth: false,
      openapi: {
        operationId: 'getReadiness',
        summary: 'Readiness: every dependency (store, models loaded and warmed) is ready',
        tags: TAGS,
        responses: {
          200: { description: 'Ready', content: [jsonContent(ReadinessSchema)] },
          503: { description: 'Not ready: the checks say which dependency is not', content: [jsonContent(ReadinessSchema)] },
        },
      },
      handler: async () => {
        const checks = await Promise.all(readinessChecks.map((check) => check().catch((err: Error) => ({ name: 'check', ready: false, detail: err.message }))));
        const ready = checks.every((c) => c.ready);
        return { kind: 'json', status: ready ? 200 : 503, body: { status: ready ? 'ready' : 'not_ready', checks } };
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      surface: 'ops',
      auth: false,
      openapi: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        tags: TAGS,
        // prom-client adds `version=0.0.4; charset=utf-8`: the text exposition format.
        responses: { 200: { description: 'The Prometheus text exposition format', content: [textContent('text/plain')] } },
      },
      handler: async () => {
        const { contentType, body } = await metrics.render();
        return { kind: 'text', contentType, body };
      },
    },
  ];
}
