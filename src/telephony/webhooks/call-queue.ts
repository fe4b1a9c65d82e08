/**
 * The events of one call waiting to be delivered, in send order, with a bounded length. The head is the
 * event being attempted (or waiting to be retried); it is never replaced or dropped from here, since an
 * attempt of it may already have reached the receiver. Overflow policy:
 * - a `transcript.interim` replaces a queued, not yet attempted interim of the same item (interims carry the
 *   whole text so far, so the newer one says everything the older one did);
 * - when the queue is full, the oldest waiting interim is dropped to make room; with no interim to drop, a new
 *   interim is dropped, and any other new event is refused (counted and logged by the sender) — except
 *   `call.ended`, which is always admitted: it is the call's last event and its summary.
 */
import type { WebhookDropReason } from '../../observability/webhook-metrics.js';
import type { WebhookEnvelope } from './events.js';

export interface QueuedEvent {
  envelope: WebhookEnvelope;
  /** Serialized once at send time: every attempt posts (and signs) the same bytes. */
  body: string;
  /** Attempts made so far. */
  attempts: number;
}

export interface DroppedEvent {
  event: QueuedEvent;
  reason: Extract<WebhookDropReason, 'superseded' | 'queue_full'>;
}

/** idle: nothing to do; ready: waiting for a delivery slot; sending: an attempt is in flight; backoff: waiting to retry. */
export type CallQueueState = 'idle' | 'ready' | 'sending' | 'backoff';

export class CallQueue {
  state: CallQueueState = 'idle';
  retryTimer: NodeJS.Timeout | undefined;
  private readonly events: QueuedEvent[] = [];

  constructor(
    readonly accountId: string,
    readonly callId: string,
    private readonly limit: number,
  ) {}

  get length(): number {
    return this.events.length;
  }

  head(): QueuedEvent | undefined {
    return this.events[0];
  }

  /** Removes the head once it is delivered or given up. */
  shiftHead(): QueuedEvent | undefined {
    return this.events.shift();
  }

  /** Empties the queue (shutdown), returning what was in it. */
  takeAll(): QueuedEvent[] {
    return this.events.splice(0);
  }

  /** Queues an event by the overflow policy above; returns what was dropped (possibly the new event itself). */
  push(event: QueuedEvent): DroppedEvent[] {
    const dropped: DroppedEvent[] = [];
    const isInterim = event.envelope.type === 'transcript.interim';
    if (isInterim) {
      const itemId = (event.envelope.data as { item_id: string }).item_id;
      const same = this.findWaiting((e) => e.envelope.type === 'transcript.interim' && (e.envelope.data as { item_id: string }).item_id === itemId);
      if (same >= 0) dropped.push({ event: this.events.splice(same, 1)[0]!, reason: 'superseded' });
    }
    if (this.events.length >= this.limit && event.envelope.type !== 'call.ended') {
      const oldestInterim = this.findWaiting((e) => e.envelope.type === 'transcript.interim');
      if (oldestInterim >= 0) {
        dropped.push({ event: this.events.splice(oldestInterim, 1)[0]!, reason: 'queue_full' });
      } else {
        dropped.push({ event, reason: 'queue_full' });
        return dropped;
      }
    }
    this.events.push(event);
    return dropped;
  }

  /** Index of the first event matching, among those not yet attempted (the head is skipped once tried). */
  private findWaiting(match: (e: QueuedEvent) => boolean): number {
    const first = this.events[0] !== undefined && (this.events[0].attempts > 0 || this.state === 'sending') ? 1 : 0;
    for (let i = first; i < this.events.length; i++) if (match(this.events[i]!)) return i;
    return -1;
  }
}
