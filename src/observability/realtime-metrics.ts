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
}

const byServer = new WeakMap<Metrics, RealtimeMetrics>();

export function realtimeMetrics(metrics: Metrics): RealtimeMetrics {
  let m = byServer.get(metrics);
  if (!m) {
    const registers = [metrics.registry];
    m = {
      sessions: new Gauge({ name: 'kuma_realtime_sessions_active', help: 'Realtime sessions open now, by kind (transcription, translation).', labelNames: ['kind'] as const, registers }),
      turns: new Counter({ name: 'kuma_realtime_vad_turns_total', help: 'Turns server_vad detected (speech_started events).', registers }),
      speechStoppedToCompleted: new Histogram({
        name: 'kuma_realtime_speech_stopped_to_completed_seconds',
        help: 'Time from a VAD turn’s speech_stopped to its transcription completed event.',
        buckets: [0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10],
        registers,
      }),
    };
    byServer.set(metrics, m);
  }
  return m;
}
