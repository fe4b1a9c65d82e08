/**
 * Transcription mode: the call's app side is the account's webhook and any control sockets open on the
 * call. Each caller turn goes out as `transcript.interim` (the turn's text so far, as it forms, Bambara apps
 * only) and `transcript.final`; keys pressed as `dtmf`; the call's start and end as `call.started` /
 * `call.ended` with its usage. Sending never waits: the webhook sender queues (and retries) on its own, and
 * control sockets are written to without blocking the media path.
 */
import type { CallEvent, WebhookEnvelope } from '../webhooks/index.js';
import { envelopeOf } from '../webhooks/events.js';
import type { CallSession } from './call-session.js';
import type { CallApp } from './call-contract.js';
import type { CallEventHub } from './call-event-hub.js';

export interface EventSink {
  send(accountId: string, callId: string, event: CallEvent): void;
}

export function transcriptionSink(call: CallSession, webhooks: EventSink, hub: CallEventHub): CallApp {
  const { callId, accountId, carrier } = call.identity;
  const interims = new Map<string, string>();
  const emit = (event: CallEvent) => {
    webhooks.send(accountId, callId, event);
    hub.publish(callId, envelopeOf(callId, event) as WebhookEnvelope);
  };
  hub.register(callId, accountId, call.start.callId || null);
  emit({
    type: 'call.started',
    data: { carrier, mode: 'transcription', carrier_call_id: call.start.callId || null, from: call.start.from ?? '', to: call.start.to ?? '' },
  });
  return {
    interim(itemId, delta) {
      const text = (interims.get(itemId) ?? '') + delta;
      interims.set(itemId, text);
      emit({ type: 'transcript.interim', data: { item_id: itemId, text } });
    },
    final(turn) {
      interims.delete(turn.itemId);
      const translated = turn.lang !== 'bam';
      emit({
        type: 'transcript.final',
        data: {
          item_id: turn.itemId,
          text: turn.original,
          language: 'bam',
          ...(translated ? { translation: { language: turn.lang, text: turn.text } } : {}),
          audio_start_ms: turn.audioStartMs,
          audio_end_ms: turn.audioEndMs,
        },
      });
    },
    dtmf(digit) {
      emit({ type: 'dtmf', data: { digit } });
    },
    interrupted() {
      // Nothing speaks in transcription mode but a greeting; its interruption is not an app event.
    },
    ended(reason) {
      const summary = call.summary();
      emit({
        type: 'call.ended',
        data: {
          reason,
          duration_ms: summary.durationMs,
          turns: summary.turns,
          usage: {
            caller_seconds: summary.callerSeconds,
            characters_synthesized: summary.charactersSynthesized,
            characters_translated: summary.charactersTranslated,
            cost_micros: summary.costMicros,
          },
        },
      });
      hub.unregister(callId);
    },
  };
}
