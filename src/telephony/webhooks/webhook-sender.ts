/**
 * Delivers a call's events to its account's webhook: signed, retried with backoff, in order per call, never
 * in the way of the media path. `send()` only queues (no I/O, no await, never throws); deliveries run on
 * their own. Rules:
 * - Per call, events arrive in send order: one attempt in flight per call; the next event waits until the
 *   previous one is delivered or given up. Delivery is at least once (an attempt whose answer was lost is
 *   repeated): receivers dedupe by event id (the `Kuma-Event-Id` header, also `id` in the body).
 * - Calls are independent: at most `maxInFlight` attempts in all and `maxInFlightPerAccount` per account, so
 *   an account whose endpoint hangs holds a few slots for at most the attempt timeout, never all of them.
 * - Memory is bounded per call (call-queue.ts says what is dropped first).
 */
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import { webhookMetrics, type WebhookGiveUpReason, type WebhookMetrics } from '../../observability/webhook-metrics.js';
import type { Store } from '../../store/store.js';
import { CallQueue, type QueuedEvent } from './call-queue.js';
import { EndpointResolver, type CheckUrl } from './endpoint-resolver.js';
import { envelopeOf, type CallEvent } from './events.js';
import { postEvent, type PostOutcome } from './post-event.js';
import { DEFAULT_RETRY, retryDelayMs, type RetryOptions } from './retry-policy.js';

export interface WebhookSenderOptions {
  retry?: Partial<RetryOptions>;
  /** One attempt's limit, connection to status line. */
  attemptTimeoutMs?: number;
  maxInFlight?: number;
  maxInFlightPerAccount?: number;
  /** Events queued per call before the overflow policy drops some. */
  queueLimitPerCall?: number;
  /** How long an account's webhook settings and a URL's policy verdict are reused. */
  endpointCacheMs?: number;
  /** Jitter source (tests may fix it). */
  random?: () => number;
}

export interface WebhookSenderDeps {
  store: Pick<Store, 'getWebhook'>;
  /** The outbound policy (allow-list); a rejection gives the events up, logged with its message. */
  checkUrl: CheckUrl;
  metrics: Metrics;
  logger: Logger;
}

export class WebhookSender {
  private readonly retry: RetryOptions;
  private readonly attemptTimeoutMs: number;
  private readonly maxInFlight: number;
  private readonly maxInFlightPerAccount: number;
  private readonly queueLimit: number;
  private readonly random: () => number;
  private readonly endpoints: EndpointResolver;
  private readonly metrics: WebhookMetrics;
  private readonly logger: Logger;

  private readonly calls = new Map<string, CallQueue>();
  /** Calls whose head event waits for a slot, oldest first. */
  private readonly ready = new Set<CallQueue>();
  private inFlight = 0;
  private readonly inFlightByAccount = new Map<string, number>();
  private pumpScheduled = false;
  private closing = false;
  private readonly stop = new AbortController();
  private drained: (() => void) | undefined;
  private closed: Promise<{ abandoned: number }> | undefined;

  constructor(deps: WebhookSenderDeps, options: WebhookSenderOptions = {}) {
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? 5_000;
    // An account's share is a quarter of the slots: enough for one integrator with hundreds of calls on a
    // healthy endpoint (32 requests of 50 ms = 640 events/s), while a hanging one leaves 3/4 to the others.
    this.maxInFlight = options.maxInFlight ?? 128;
    this.maxInFlightPerAccount = options.maxInFlightPerAccount ?? 32;
    this.queueLimit = options.queueLimitPerCall ?? 256;
    this.random = options.random ?? Math.random;
    this.endpoints = new EndpointResolver(deps.store, deps.checkUrl, options.endpointCacheMs ?? 5_000);
    this.metrics = webhookMetrics(deps.metrics);
    this.logger = deps.logger.child({ component: 'webhooks' });
  }

  /** Queues one event of a call. Synchronous, constant time, never throws: the media path calls it. */
  send(accountId: string, callId: string, event: CallEvent): void {
    try {
      if (this.closing) {
        this.metrics.dropped.inc({ reason: 'closed', type: event.type });
        return;
      }
      const envelope = envelopeOf(callId, event);
      const queued: QueuedEvent = { envelope, body: JSON.stringify(envelope), attempts: 0 };
      const key = `${accountId}\u0000${callId}`;
      let call = this.calls.get(key);
      if (!call) {
        call = new CallQueue(accountId, callId, this.queueLimit);
        this.calls.set(key, call);
      }
      for (const { event: lost, reason } of call.push(queued)) {
        this.metrics.dropped.inc({ reason, type: lost.envelope.type });
        // A superseded interim is the policy working; anything else lost to a full queue is worth a line.
        if (reason === 'queue_full') {
          const level = lost.envelope.type === 'transcript.interim' ? 'debug' : 'warn';
          this.logger[level](
            { account_id: accountId, call_id: callId, event_id: lost.envelope.id, type: lost.envelope.type },
            'webhook queue full: event dropped',
          );
        }
      }
      if (call.state === 'idle' && call.length > 0) this.markReady(call);
    } catch (error) {
      // Only an unserializable payload can land here; the media path must not hear of it.
      this.metrics.dropped.inc({ reason: 'unserializable', type: event?.type ?? 'unknown' });
      this.logger.error({ account_id: accountId, call_id: callId, err: error instanceof Error ? error.message : String(error) }, 'webhook event dropped');
    }
  }

  /** Events waiting or in flight, over all calls (for shutdown reports and tests). */
  get pending(): number {
    let n = 0;
    for (const call of this.calls.values()) n += call.length;
    return n;
  }

  /**
   * Stops taking events and tries to deliver what is queued until `deadlineMs` from now; then ends attempts
   * in flight and gives the rest up. Resolves with the number of events given up at the deadline.
   */
  close(deadlineMs: number): Promise<{ abandoned: number }> {
    this.closed ??= this.drainUntil(deadlineMs);
    return this.closed;
  }

  private async drainUntil(deadlineMs: number): Promise<{ abandoned: number }> {
    this.closing = true;
    if (this.calls.size === 0) return { abandoned: 0 };
    const allDelivered = new Promise<void>((resolve) => (this.drained = resolve));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'deadline'>((resolve) => (timer = setTimeout(() => resolve('deadline'), deadlineMs)));
    const first = await Promise.race([allDelivered.then(() => 'drained' as const), deadline]);
    clearTimeout(timer);
    if (first === 'drained') return { abandoned: 0 };

    const abandoned = this.pending;
    this.stop.abort();
    for (const call of this.calls.values()) {
      clearTimeout(call.retryTimer);
      this.ready.delete(call);
      // A call with an attempt in flight is given up when that attempt returns (promptly: it is aborted).
      if (call.state !== 'sending') this.giveUpAll(call);
    }
    await allDelivered;
    return { abandoned };
  }

  private markReady(call: CallQueue): void {
    call.state = 'ready';
    this.ready.add(call);
    this.schedulePump();
  }

  /** Starting attempts waits for the next turn of the event loop, so that `send()` does no I/O itself. */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    for (const call of this.ready) {
      if (this.inFlight >= this.maxInFlight) return;
      const accountLoad = this.inFlightByAccount.get(call.accountId) ?? 0;
      // This account is at its share; a later call of another account may still go.
      if (accountLoad >= this.maxInFlightPerAccount) continue;
      this.ready.delete(call);
      void this.attempt(call);
    }
  }

  private async attempt(call: CallQueue): Promise<void> {
    const event = call.head()!;
    call.state = 'sending';
    this.inFlight++;
    this.inFlightByAccount.set(call.accountId, (this.inFlightByAccount.get(call.accountId) ?? 0) + 1);
    let outcome: PostOutcome | { kind: 'none' } | { kind: 'refused'; reason: string };
    try {
      const endpoint = await this.endpoints.resolve(call.accountId);
      if (endpoint.kind === 'none') outcome = endpoint;
      else if (endpoint.kind === 'refused') outcome = { kind: 'refused', reason: `${endpoint.host}: ${endpoint.reason}` };
      else {
        event.attempts++;
        outcome = await postEvent({
          url: endpoint.url,
          secret: endpoint.secret,
          eventId: event.envelope.id,
          body: event.body,
          timeoutMs: this.attemptTimeoutMs,
          stop: this.stop.signal,
        });
      }
    } catch (error) {
      event.attempts++;
      outcome = { kind: 'retry', reason: `webhook settings unreadable: ${error instanceof Error ? error.message : String(error)}` };
    } finally {
      this.inFlight--;
      const load = (this.inFlightByAccount.get(call.accountId) ?? 1) - 1;
      if (load === 0) this.inFlightByAccount.delete(call.accountId);
      else this.inFlightByAccount.set(call.accountId, load);
    }
    this.settle(call, event, outcome);
    this.schedulePump();
  }

  private settle(call: CallQueue, event: QueuedEvent, outcome: PostOutcome | { kind: 'none' } | { kind: 'refused'; reason: string }): void {
    if (this.stop.signal.aborted) {
      if (outcome.kind === 'delivered') {
        this.metrics.delivered.inc();
        call.shiftHead();
      }
      return this.giveUpAll(call);
    }
    switch (outcome.kind) {
      case 'delivered':
        this.metrics.delivered.inc();
        return this.next(call);
      case 'none':
        // No webhook configured (or removed mid-call): events are dropped quietly, as documented.
        this.metrics.dropped.inc({ reason: 'no_webhook', type: event.envelope.type });
        return this.next(call);
      case 'refused':
        this.giveUp(call, event, 'refused_url', outcome.reason);
        return this.next(call);
      case 'reject':
        this.giveUp(call, event, 'rejected', outcome.reason);
        return this.next(call);
      case 'stopped':
        return this.giveUpAll(call);
      case 'retry':
        if (event.attempts >= this.retry.maxAttempts) {
          this.giveUp(call, event, 'attempts_exhausted', outcome.reason);
          return this.next(call);
        }
        this.metrics.retried.inc();
        call.state = 'backoff';
        call.retryTimer = setTimeout(() => this.markReady(call), retryDelayMs(event.attempts, this.retry, outcome.retryAfterMs, this.random));
        // A pending retry alone must not keep the process alive; close() is how queued events are flushed.
        call.retryTimer.unref();
    }
  }

  /** The head is done with: on to the call's next event, or forget the call. */
  private next(call: CallQueue): void {
    call.shiftHead();
    if (call.length > 0) return this.markReady(call);
    call.state = 'idle';
    this.forget(call);
  }

  private giveUp(call: CallQueue, event: QueuedEvent, reason: WebhookGiveUpReason, detail: string): void {
    this.metrics.givenUp.inc({ reason });
    // Ids, type and reason only: never the body (caller speech) nor the secret, nor the URL's path or query.
    this.logger.warn(
      { account_id: call.accountId, call_id: call.callId, event_id: event.envelope.id, type: event.envelope.type, attempts: event.attempts, reason, detail },
      'webhook event given up',
    );
  }

  /** Shutdown: one log line per call (not per event), every event counted. */
  private giveUpAll(call: CallQueue): void {
    const events = call.takeAll();
    if (events.length > 0) {
      this.metrics.givenUp.inc({ reason: 'shutdown' }, events.length);
      const first = events[0]!.envelope;
      this.logger.warn(
        { account_id: call.accountId, call_id: call.callId, events: events.length, first_event_id: first.id, first_type: first.type, reason: 'shutdown' },
        'webhook events given up: sender stopped before delivery',
      );
    }
    call.state = 'idle';
    this.forget(call);
  }

  private forget(call: CallQueue): void {
    this.calls.delete(`${call.accountId}\u0000${call.callId}`);
    this.ready.delete(call);
    if (this.closing && this.calls.size === 0) this.drained?.();
  }
}
