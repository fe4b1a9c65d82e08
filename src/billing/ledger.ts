/**
 * The ledger: prices work from the price table and guards the balance. Work is paid in two steps: before
 * it starts, `reserve` holds its cost (or an upper bound of it) on the account — atomically with the check
 * that the balance, less every other request's hold, covers it; afterwards the reservation settles to what
 * was delivered (usage rows and debit in one transaction) or is released. The rule this gives is in the
 * README's billing section.
 */
import { randomBytes } from 'node:crypto';
import type { NewUsageRecord, Store, UsageUnit } from '../store/store.js';
import { InsufficientQuotaError } from './errors.js';
import type { PriceTable } from '../config/prices.js';
import { Reservation, type ChargeContext, type ChargeItem, type ReservationHost, type WorkKind } from './reservation.js';

export { Reservation, type ChargeContext, type ChargeItem, type WorkKind } from './reservation.js';

export interface LedgerOptions {
  /** Clock for hold expiry (ms since the epoch). */
  now?: () => number;
  /** A hold not renewed for this long stops counting: how long a crashed process's holds block an account. */
  holdTtlMs?: number;
  /** How often the holds of open reservations are renewed; well under holdTtlMs. */
  renewEveryMs?: number;
  /** Told what every settlement recorded (the usage metric); must not throw, and is not awaited. */
  onUsage?: (records: readonly NewUsageRecord[]) => void;
}

export const DEFAULT_HOLD_TTL_MS = 5 * 60_000;

/** Absorbs float noise such as 0.1 * 3 = 0.30000000000000004 so that it is not rounded up a whole micro. */
const FLOAT_TOLERANCE = 1e-9;

export class Ledger {
  private readonly now: () => number;
  private readonly holdTtlMs: number;
  private readonly renewEveryMs: number;
  private readonly open = new Set<Reservation>();
  private renewTimer: NodeJS.Timeout | undefined;
  private readonly host: ReservationHost;

  constructor(
    private readonly store: Store,
    private readonly prices: PriceTable,
    private readonly options: LedgerOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.holdTtlMs = options.holdTtlMs ?? DEFAULT_HOLD_TTL_MS;
    this.renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(this.holdTtlMs / 5));
    this.host = {
      store,
      now: this.now,
      toRecords: (ctx, items) => this.toRecords(ctx, items),
      closed: (reservation) => this.forget(reservation),
      settled: (records) => {
        try {
          this.options.onUsage?.(records);
        } catch {
          // Metrics must never turn a recorded charge into a failed request.
        }
      },
    };
  }

  /** Micros per unit of this kind of work; a unit the kind is never billed in is a programming error. */
  priceOf(unit: UsageUnit, kind: WorkKind): number {
    const p = this.prices;
    if (kind === 'transcription' && unit === 'second') return p.transcriptionPerSecond;
    if (kind === 'translation' && unit === 'character') return p.translationPerCharacter;
    if (kind === 'translation' && unit === 'token') return p.translationPerToken;
    if (kind === 'speech' && unit === 'character') return p.speechPerCharacter;
    throw new Error(`No price for ${kind} billed per ${unit}`);
  }

  /**
   * Whole micros owed for `quantity` units. Rounded up, never down: 0.3 s of audio at 100 micros/s is 30
   * micros and 0.001 s is 1 micro, not free, so splitting work into tiny requests cannot dodge billing.
   * The tolerance keeps float noise from costing a micro ((0.1 + 0.2) s at 100 micros/s is 30, not 31).
   */
  costOf(quantity: number, unitPriceMicros: number): number {
    if (!Number.isFinite(quantity) || quantity < 0) throw new RangeError(`Invalid quantity: ${quantity}`);
    if (!Number.isSafeInteger(unitPriceMicros) || unitPriceMicros < 0) {
      throw new RangeError(`Invalid unit price: ${unitPriceMicros}`);
    }
    // `+ 0` turns the -0 that Math.ceil gives for a zero quantity into 0.
    return Math.ceil(quantity * unitPriceMicros - FLOAT_TOLERANCE) + 0;
  }

  /** What these items will be charged, in micros: the sum of each item's rounded cost, as settle() records it. */
  costOfItems(items: readonly ChargeItem[]): number {
    return items.reduce((sum, item) => sum + this.costOf(item.quantity, this.priceOf(item.unit, item.kind)), 0);
  }

  /**
   * The cheap early refusal (before a request body is read): nothing is available — the balance less the
   * holds of requests in flight is zero or below. Throws InsufficientQuotaError.
   */
  async assertCanStart(accountId: string): Promise<void> {
    const available = await this.store.availableMicros(accountId, this.now());
    if (available <= 0) throw new InsufficientQuotaError(accountId, 1, available);
  }

  /**
   * Holds `micros` on the account for this request, or throws InsufficientQuotaError when the balance less
   * every live hold cannot cover it (or nothing at all is available). The caller must settle or release the
   * returned reservation on every path.
   */
  async reserve(ctx: ChargeContext, micros: number): Promise<Reservation> {
    const id = `hold_${randomBytes(9).toString('hex')}`;
    const outcome = await this.store.placeHold(
      { id, accountId: ctx.accountId, requestId: ctx.requestId, amountMicros: micros, expiresAt: this.now() + this.holdTtlMs },
      this.now(),
    );
    if (!outcome.placed) throw new InsufficientQuotaError(ctx.accountId, micros, outcome.availableMicros);
    const reservation = new Reservation(this.host, ctx, id, micros);
    this.open.add(reservation);
    this.renewTimer ??= setInterval(() => void this.renew(), this.renewEveryMs).unref();
    return reservation;
  }

  /** Reservations not yet settled or released (in this process). */
  get openReservations(): number {
    return this.open.size;
  }

  private forget(reservation: Reservation): void {
    this.open.delete(reservation);
    if (this.open.size === 0 && this.renewTimer) {
      clearInterval(this.renewTimer);
      this.renewTimer = undefined;
    }
  }

  /** Keeps the holds of live requests from expiring. A failed renewal is retried at the next tick. */
  private async renew(): Promise<void> {
    const ids = [...this.open].map((r) => r.id);
    await this.store.renewHolds(ids, this.now() + this.holdTtlMs).catch(() => {});
  }

  private toRecords(ctx: ChargeContext, items: readonly ChargeItem[]): NewUsageRecord[] {
    const records: NewUsageRecord[] = [];
    for (const item of items) {
      if (item.quantity === 0) continue;
      const unitPriceMicros = this.priceOf(item.unit, item.kind);
      records.push({
        requestId: ctx.requestId,
        accountId: ctx.accountId,
        keyId: ctx.keyId,
        model: item.model,
        unit: item.unit,
        quantity: item.quantity,
        unitPriceMicros,
        costMicros: this.costOf(item.quantity, unitPriceMicros),
      });
    }
    return records;
  }
}
