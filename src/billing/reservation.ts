/**
 * A reservation: money held on an account for one request, taken before any work starts and closed exactly
 * once — settled to what was delivered (usage rows, debit and the hold's release in one transaction) or
 * released (nothing charged). Handlers close it in a `finally`, so no path leaves a hold behind; a process
 * that dies does leave its holds, and those stop counting when they expire (the ledger keeps live ones
 * renewed). Long-lived work delivered in pieces (a speech socket's phrases) settles each piece as it is
 * delivered (`settlePart`: rows, debit and the hold shrunk by as much, in one transaction), so a crash loses
 * at most the piece in flight.
 */
import type { NewUsageRecord, Store } from '../store/store.js';
import { InsufficientQuotaError } from './errors.js';

export type WorkKind = 'transcription' | 'translation' | 'speech';

export interface ChargeContext {
  requestId: string;
  accountId: string;
  keyId: string;
  /**
   * Sessions (realtime, speech socket, calls): a settlement after the key's revocation is refused — nothing
   * recorded, the hold dropped, KeyRevokedError thrown — so nothing is charged to a key from the moment it
   * is revoked, by whichever process. A REST request admitted before a revocation settles as usual.
   */
  requireActiveKey?: boolean;
}

export interface ChargeItem {
  model: string;
  kind: WorkKind;
  unit: NewUsageRecord['unit'];
  quantity: number;
}

export interface ChargeResult {
  /** The rows written, one per non-zero item, in item order. */
  records: NewUsageRecord[];
  /** The account's balance once this charge has landed. */
  balanceMicros: number;
}

/** What a reservation needs from the ledger that made it. */
export interface ReservationHost {
  readonly store: Store;
  now(): number;
  toRecords(ctx: ChargeContext, items: readonly ChargeItem[]): NewUsageRecord[];
  /** Called once when the reservation closes (stops its renewal). */
  closed(reservation: Reservation): void;
  /** Called after a settlement wrote rows (metrics). */
  settled(records: readonly NewUsageRecord[]): void;
}

export class Reservation {
  private held: number;
  private open = true;
  /** Parts settled so far: each part's rows carry its number (the store's idempotency key). */
  private parts = 0;

  constructor(
    private readonly host: ReservationHost,
    readonly ctx: ChargeContext,
    /** The hold's id in the store. */
    readonly id: string,
    heldMicros: number,
  ) {
    this.held = heldMicros;
  }

  /** Micros this reservation holds now. */
  get heldMicros(): number {
    return this.held;
  }

  get isOpen(): boolean {
    return this.open;
  }

  /**
   * Raises the hold to `totalMicros` (no change when it already holds that much), under the same rule as
   * the first hold: balance − every live hold must cover the increase, or InsufficientQuotaError.
   */
  async growTo(totalMicros: number): Promise<void> {
    if (!this.open) throw new Error(`Reservation ${this.id} is already closed`);
    const extra = totalMicros - this.held;
    if (extra <= 0) return;
    const outcome = await this.host.store.growHold(this.id, extra, this.host.now());
    if (!outcome.placed) throw new InsufficientQuotaError(this.ctx.accountId, extra, outcome.availableMicros);
    this.held = totalMicros;
  }

  /**
   * Raises the hold by `extraMicros`, under the same rule as growTo. For work whose parts settle as they are
   * delivered (the hold shrinks as they do), where a running total of what was held would not be the hold.
   */
  async growBy(extraMicros: number): Promise<void> {
    if (!this.open) throw new Error(`Reservation ${this.id} is already closed`);
    if (extraMicros <= 0) return;
    const outcome = await this.host.store.growHold(this.id, extraMicros, this.host.now());
    if (!outcome.placed) throw new InsufficientQuotaError(this.ctx.accountId, extraMicros, outcome.availableMicros);
    this.held += extraMicros;
  }

  /**
   * Charges the items now and takes their cost off the hold, in one transaction; the reservation stays open
   * for the rest (settle or release it later). Items of quantity 0 write nothing.
   */
  async settlePart(items: readonly ChargeItem[]): Promise<ChargeResult> {
    if (!this.open) throw new Error(`Reservation ${this.id} is already closed`);
    const records = this.host.toRecords(this.ctx, items);
    if (records.length === 0) {
      const account = await this.host.store.getAccount(this.ctx.accountId);
      if (!account) throw new Error(`Unknown account: ${this.ctx.accountId}`);
      return { records, balanceMicros: account.balanceMicros };
    }
    const part = ++this.parts;
    const { balances } = await this.host.store.recordUsage(records, {
      partOfHold: { holdId: this.id, part },
      ...(this.ctx.requireActiveKey ? { requireActiveKey: true } : {}),
    });
    const balanceMicros = balances[this.ctx.accountId];
    if (balanceMicros === undefined) throw new Error(`Store returned no balance for ${this.ctx.accountId}`);
    this.held = Math.max(0, this.held - records.reduce((sum, r) => sum + r.costMicros, 0));
    this.host.settled(records);
    return { records, balanceMicros };
  }

  /**
   * Charges the items and drops the hold, in one transaction. What is charged is what the items cost, even
   * when that exceeds the hold (callers hold an upper bound, so it does not). Closing twice is an error;
   * if the store fails, the hold is still dropped (best effort) so the money is not blocked.
   */
  async settle(items: readonly ChargeItem[]): Promise<ChargeResult> {
    if (!this.open) throw new Error(`Reservation ${this.id} is already closed`);
    this.open = false;
    this.host.closed(this);
    try {
      const records = this.host.toRecords(this.ctx, items);
      if (records.length === 0) {
        await this.host.store.releaseHold(this.id);
        const account = await this.host.store.getAccount(this.ctx.accountId);
        if (!account) throw new Error(`Unknown account: ${this.ctx.accountId}`);
        return { records, balanceMicros: account.balanceMicros };
      }
      const { balances } = await this.host.store.recordUsage(records, {
        releaseHoldId: this.id,
        ...(this.ctx.requireActiveKey ? { requireActiveKey: true } : {}),
      });
      const balanceMicros = balances[this.ctx.accountId];
      if (balanceMicros === undefined) throw new Error(`Store returned no balance for ${this.ctx.accountId}`);
      this.host.settled(records);
      return { records, balanceMicros };
    } catch (error) {
      await this.host.store.releaseHold(this.id).catch(() => {});
      throw error;
    }
  }

  /** Drops the hold and charges nothing. A no-op once the reservation is closed, so `finally` can always call it. */
  async release(): Promise<void> {
    if (!this.open) return;
    this.open = false;
    this.host.closed(this);
    await this.host.store.releaseHold(this.id);
  }
}
