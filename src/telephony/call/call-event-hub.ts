/**
 * Live calls and who listens to them: the per-call control WebSocket (GET /telephony/v1/calls/:id/events)
 * subscribes here and receives the same events, in the same envelope, as the account's webhook. A call is
 * found by Kuma's id or by the carrier's call id (Twilio CallSid…), and only by its own account. Events sent
 * before a listener joined are not replayed (the webhook is the durable channel).
 */
import type { WebhookEnvelope } from '../webhooks/index.js';

export type CallEventListener = (envelope: WebhookEnvelope) => void;

interface LiveCall {
  accountId: string;
  carrierCallId: string | null;
  listeners: Set<CallEventListener>;
  /** Closes the listeners' sockets when the call is over. */
  closers: Set<() => void>;
}

export class CallEventHub {
  private readonly calls = new Map<string, LiveCall>();
  private readonly byCarrierId = new Map<string, string>();

  register(callId: string, accountId: string, carrierCallId: string | null): void {
    this.calls.set(callId, { accountId, carrierCallId, listeners: new Set(), closers: new Set() });
    if (carrierCallId) this.byCarrierId.set(carrierCallId, callId);
  }

  /** The call's id if it is live and belongs to the account (by Kuma's id or the carrier's). */
  find(id: string, accountId: string): string | null {
    const callId = this.calls.has(id) ? id : this.byCarrierId.get(id);
    if (!callId) return null;
    return this.calls.get(callId)!.accountId === accountId ? callId : null;
  }

  subscribe(callId: string, listener: CallEventListener, onCallEnded: () => void): () => void {
    const call = this.calls.get(callId);
    if (!call) {
      onCallEnded();
      return () => {};
    }
    call.listeners.add(listener);
    call.closers.add(onCallEnded);
    return () => {
      call.listeners.delete(listener);
      call.closers.delete(onCallEnded);
    };
  }

  publish(callId: string, envelope: WebhookEnvelope): void {
    const call = this.calls.get(callId);
    if (!call) return;
    for (const listener of call.listeners) listener(envelope);
  }

  /** The call is over: its listeners are told (after its last event) and dropped. */
  unregister(callId: string): void {
    const call = this.calls.get(callId);
    if (!call) return;
    this.calls.delete(callId);
    if (call.carrierCallId) this.byCarrierId.delete(call.carrierCallId);
    for (const close of call.closers) close();
  }

  get liveCalls(): number {
    return this.calls.size;
  }
}
