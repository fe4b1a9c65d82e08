/**
 * Metrics of realtime sessions, on the server's registry: sessions open by kind, VAD turns, and the
 * latency a voice agent feels — from the end of speech (speech_stopped) to the final transcript (completed).
 * Frames in and out are counted by the transport (kuma_websocket_frames_total).
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Metrics } from './metrics.js';

export interface RealtimeMetrics {
  sessions: Gauge<'kind'>;
  turns: Counter;
  speechStoppedToCompleted: Histogram;
  chunks: Counter<'kind'>;
  itemsFailed: Counter<'code'>;
}

const byServer = new WeakMap<Metrics, RealtimeMetrics>();

export function realtimeMetrics(metrics: Metrics): RealtimeMetrics {
  let m = byServer.get(metrics);
  if (!m) {
    const registers = [metrics.registry];
    m = {
      sessions: new Gauge({
        name: 'kuma_realtime_sessions_active',
        help: 'Realtime sessions open now, by kind (transcription, translation).',
        labelNames: ['kind'] as const,
        registers,
      }),
      turns: new Counter({ name: 'kuma_realtime_vad_turns_total', help: 'Turns server_vad detected (speech_started events).', registers }),
      speechStoppedToCompleted: new Histogram({
        name: 'kuma_realtime_speech_stopped_to_completed_seconds',
        help: 'Time from a VAD turn’s speech_stopped to its transcription completed event.',
        buckets: [0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10],
        registers,
      }),
      // How overload shows: eager chunks (interims) give way to full ones, then items fail transcription_timeout.
      chunks: new Counter({
        name: 'kuma_realtime_chunks_total',
        help: 'Chunks of realtime turns encoded, by kind: eager (small, while the model had a free place), full (the model busy), final.',
        labelNames: ['kind'] as const,
        registers,
      }),
      itemsFailed: new Counter({
        name: 'kuma_realtime_items_failed_total',
        help: 'Realtime items that got a transcription failed event, by error code (transcription_timeout, service_unavailable, server_error).',
        labelNames: ['code'] as const,
        registers,
      }),
    };
    byServer.set(metrics, m);
  }
  return m;
}
