/**
 * Server events toward one client, in order, respecting backpressure: once a send answers 'backpressure',
 * later events wait here until the transport says the socket drained. What waits is bounded: a client that
 * lets more than `maxQueuedBytes` pile up is closed 1008 (the transport has its own cut-off for what it holds).
 * `flushed()` tells when every event sent so far has left the process: what an item's charge waits for.
 */
import { randomBytes } from 'node:crypto';
import type { DuplexPeer } from '../../duplex/duplex-contract.js';
import type { ServerEvent } from './server-events.js';
import { CLOSE_CODES, CLOSE_REASONS } from '../../duplex/close-codes.js';

export class Outbound {
  private readonly queue: string[] = [];
  private queuedBytes = 0;
  private waiting = false;
  /** Called once the queue here is empty again. */
  private emptyWaiters: (() => void)[] = [];
  /** Event ids: a per-session prefix and a counter (unique, and no random bytes per event). */
  private readonly prefix = `event_${randomBytes(6).toString('hex')}`;
  private seq = 0;

  constructor(
    private readonly peer: DuplexPeer,
    private readonly maxQueuedBytes: number,
  ) {}

  send(event: ServerEvent): void {
    const text = JSON.stringify({ event_id: `${this.prefix}${(this.seq++).toString(36)}`, ...event });
    if (this.waiting) {
      this.queue.push(text);
      this.queuedBytes += text.length;
      if (this.queuedBytes > this.maxQueuedBytes) this.peer.close(CLOSE_CODES.policyViolation, CLOSE_REASONS.notReading);
      return;
    }
    if (this.peer.sendText(text) === 'backpressure') this.waitForDrain();
  }

  /** True once every event sent so far has been written to the network, false if the socket closed first. */
  flushed(): Promise<boolean> {
    if (!this.waiting) return this.peer.flushed();
    return new Promise<boolean>((resolve) => this.emptyWaiters.push(() => resolve(this.peer.flushed())));
  }

  private waitForDrain(): void {
    this.waiting = true;
    void this.peer.drained().then(() => {
      this.waiting = false;
      while (this.queue.length && !this.waiting) {
        const text = this.queue.shift()!;
        this.queuedBytes -= text.length;
        const outcome = this.peer.sendText(text);
        if (outcome === 'closed') {
          this.queue.length = 0;
          this.queuedBytes = 0;
        } else if (outcome === 'backpressure') this.waitForDrain();
      }
      if (!this.waiting) for (const wake of this.emptyWaiters.splice(0)) wake();
    });
  }
}
