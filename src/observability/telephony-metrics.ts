/**
 * Metrics of phone calls, on the server's registry: calls in progress by carrier, calls ended by carrier and
 * reason, barge-ins, the pacing of outbound frames (how late each frame left against its schedule), and the
 * latency a caller feels in relay mode — from the end of their speech to the first frame of the reply, less
 * the application's own time (from the prompt sent to its first reply text).
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Metrics } from './metrics.js';

export interface TelephonyMetrics {
  calls: Gauge<'carrier'>;
  callsEnded: Counter<'carrier' | 'reason'>;
  bargeIns: Counter;
  frameLateness: Histogram;
  replyLatency: Histogram;
}

const byServer = new WeakMap<Metrics, TelephonyMetrics>();

export function telephonyMetrics(metrics: Metrics): TelephonyMetrics {
  let m = byServer.get(metrics);
  if (!m) {
    const registers = [metrics.registry];
    m = {
      calls: new Gauge({ name: 'kuma_telephony_calls_active', help: 'Calls in progress, by carrier.', labelNames: ['carrier'] as const, registers }),
      callsEnded: new Counter({
        name: 'kuma_telephony_calls_ended_total',
        help: 'Calls ended, by carrier and reason (caller_hangup, app_ended, app_disconnected, insufficient_quota, …).',
        labelNames: ['carrier', 'reason'] as const,
        registers,
      }),
      bargeIns: new Counter({ name: 'kuma_telephony_barge_ins_total', help: 'Times caller speech or a key interrupted the voice.', registers }),
      frameLateness: new Histogram({
        name: 'kuma_telephony_frame_lateness_seconds',
        help: 'How late each outbound audio frame left against its real-time schedule.',
        buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16],
        registers,
      }),
      replyLatency: new Histogram({
        name: 'kuma_telephony_reply_latency_seconds',
        help: "Relay mode: caller's end of speech to the first reply frame sent to the carrier, less the application's own time.",
        buckets: [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2, 5],
        registers,
      }),
    };
    byServer.set(metrics, m);
  }
  return m;
}
