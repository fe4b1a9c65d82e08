/**
 * The events Kuma POSTs to an account's webhook about its phone calls in transcription mode, and the
 * envelope each travels in: `{id, type, call_id, created_at, data}`. The call core builds the `data`; the
 * sender stamps the id and time when the event is sent, so every retry of one event carries the same id
 * (receivers dedupe by it: delivery is at least once).
 */
import { randomBytes } from 'node:crypto';

export interface CallStartedData {
  carrier: string;
  mode: string;
  /** The carrier's own call id (Twilio CallSid…), when it gave one. */
  carrier_call_id?: string | null;
  from?: string;
  to?: string;
}

export interface TranscriptInterimData {
  item_id: string;
  /** The whole text so far for this turn (not a delta): a later interim supersedes an earlier one. */
  text: string;
}

export interface TranscriptFinalData {
  item_id: string;
  text: string;
  language: string;
  /** With a bilingual bridge: the turn translated into the application's language. */
  translation?: { language: string; text: string };
  audio_start_ms: number;
  audio_end_ms: number;
}

export interface DtmfData {
  digit: string;
}

export interface CallEndedData {
  reason: string;
  duration_ms: number;
  turns: number;
  usage: {
    caller_seconds: number;
    characters_synthesized: number;
    characters_translated: number;
    cost_micros: number;
  };
}

/** What the call core hands to `WebhookSender.send`. */
export type CallEvent =
  | { type: 'call.started'; data: CallStartedData }
  | { type: 'transcript.interim'; data: TranscriptInterimData }
  | { type: 'transcript.final'; data: TranscriptFinalData }
  | { type: 'dtmf'; data: DtmfData }
  | { type: 'call.ended'; data: CallEndedData };

export type CallEventType = CallEvent['type'];

/** What goes on the wire, as JSON. */
export type WebhookEnvelope = CallEvent & {
  id: string;
  call_id: string;
  /** ISO 8601, when the call core sent the event (not when this attempt was made). */
  created_at: string;
};

/** `evt_` and 24 hex digits: unique enough to dedupe on, short enough to log. */
export function newEventId(): string {
  return `evt_${randomBytes(12).toString('hex')}`;
}

export function envelopeOf(callId: string, event: CallEvent, now: Date = new Date()): WebhookEnvelope {
  // Field order is the documented one (id, type, call_id, created_at, data), for readers of raw bodies.
  return { id: newEventId(), type: event.type, call_id: callId, created_at: now.toISOString(), data: event.data } as WebhookEnvelope;
}
