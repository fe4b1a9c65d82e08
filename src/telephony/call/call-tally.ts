/**
 * What a call counts as it goes — caller turns and seconds, characters spoken and translated — and the call
 * record written when it ends (its cost read from the ledger rows under the call's id); and the reply-latency
 * clock of relay mode: the caller's end of speech → the prompt → the app's first reply text → the reply's first
 * frame, less the app's own time.
 */
import type { CallRecord, Store } from '../../store/store.js';

export class CallTally {
  private readonly startedAt = new Date();
  turns = 0;
  callerSeconds = 0;
  charactersSynthesized = 0;
  charactersTranslated = 0;

  constructor(private readonly base: Pick<CallRecord, 'id' | 'accountId' | 'keyId' | 'carrier' | 'carrierCallId'>) {}

  /** The record as of now, with this end reason and cost. */
  recordOf(mode: string, reason: string, costMicros: number): CallRecord {
    const endedAt = new Date();
    return {
      ...this.base,
      mode,
      startedAt: this.startedAt.toISOString(),
      endedAt: endedAt.toISOString(),
      durationMs: endedAt.getTime() - this.startedAt.getTime(),
      turns: this.turns,
      callerSeconds: this.callerSeconds,
      charactersSynthesized: this.charactersSynthesized,
      charactersTranslated: this.charactersTranslated,
      costMicros,
      endReason: reason,
    };
  }

  /** The final record: the cost is what the ledger recorded under the call's id. */
  async finalRecord(store: Store, mode: string, reason: string): Promise<CallRecord> {
    const rows = await store.listUsage({ requestId: this.base.id });
    return this.recordOf(
      mode,
      reason,
      rows.reduce((sum, r) => sum + r.costMicros, 0),
    );
  }
}

/** Relay mode's reply latency, in performance.now() milliseconds. */
export class ReplyLatency {
  private lastStoppedAt = Number.NaN;
  private turn: { stoppedAt: number; promptAt: number; textAt: number } | null = null;

  speechStopped(): void {
    this.lastStoppedAt = performance.now();
  }

  /** A turn's prompt went to the app. */
  prompted(): void {
    if (!Number.isNaN(this.lastStoppedAt)) this.turn = { stoppedAt: this.lastStoppedAt, promptAt: performance.now(), textAt: Number.NaN };
  }

  /** The app sent reply text. */
  replied(): void {
    if (this.turn && Number.isNaN(this.turn.textAt)) this.turn.textAt = performance.now();
  }

  /** A reply's first frame is going out: the latency in seconds, once per prompted turn (else null). */
  audible(): number | null {
    const t = this.turn;
    if (!t || Number.isNaN(t.textAt)) return null;
    this.turn = null;
    return (t.promptAt - t.stoppedAt + (performance.now() - t.textAt)) / 1000;
  }
}
