/**
 * Prometheus metrics: request counts by route and status, latency histograms by route, requests in flight,
 * and the process's default metrics. One registry per server so tests can run several servers side by side.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'kuma_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: 'kuma_http_request_duration_seconds',
    help: 'Time from request start to the end of the response, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: 'kuma_http_in_flight_requests',
    help: 'Requests being processed now.',
    registers: [this.registry],
  });
  readonly usage = new Counter({
    name: 'kuma_usage_units_total',
    help: 'Billed quantity recorded in the ledger, by model and unit.',
    labelNames: ['model', 'unit'] as const,
    registers: [this.registry],
  });
  readonly websocketSessions = new Gauge({
    name: 'kuma_websocket_sessions_active',
    help: 'WebSocket sessions open now, by route pattern.',
    labelNames: ['route'] as const,
    registers: [this.registry],
  });
  readonly websocketFrames = new Counter({
    name: 'kuma_websocket_frames_total',
    help: 'WebSocket messages received (in) and sent (out), by route pattern.',
    labelNames: ['route', 'direction'] as const,
    registers: [this.registry],
  });
  readonly websocketPreAuth = new Gauge({
    name: 'kuma_websocket_preauth_sockets',
    help: 'WebSocket sockets open before their caller is authenticated (pre-auth: carrier streams whose token comes in their start message).',
    registers: [this.registry],
  });
  readonly websocketRefusals = new Counter({
    name: 'kuma_websocket_refusals_total',
    help: 'WebSocket sockets refused or closed by a limit, by route pattern and reason: preauth_limit, preauth_address_limit (upgrade refused), message_too_big, not_reading, ping_flood, and the close reason of a pre-auth socket its handler refused (start_timeout, invalid_call_token, …).',
    labelNames: ['route', 'reason'] as const,
    registers: [this.registry],
  });

  /**
   * The labelled children of the request counter and latency histogram, per method/route/status: looking a
   * child up by its label object hashes the labels on every call (≈ 3 % of a small request's CPU).
   * Bounded: methods, route patterns and statuses are finite sets.
   */
  private readonly requestSeries = new Map<string, { count: { inc(): void }; latency: { observe(v: number): void } }>();

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'kuma_' });
  }

  /** Route is the pattern (e.g. `/compat/v1/models/:model`), never the raw path, to bound label cardinality. */
  observe(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let series = this.requestSeries.get(key);
    if (!series) {
      series = { count: this.requests.labels({ method, route, status: String(status) }), latency: this.latency.labels({ method, route }) };
      this.requestSeries.set(key, series);
    }
    series.count.inc();
    series.latency.observe(seconds);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
