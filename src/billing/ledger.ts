/**
 * The ledger: prices work from the price table, refuses requests an account cannot pay for, and records
 * what a request used, debiting the account in the same transaction as the usage rows it writes.
 */
import { ApiError } from '../api/errors.js';
import type { Account, NewUsageRecord, Store, UsageUnit } from '../store/store.js';
import type { PriceTable } from './prices.js';

export type WorkKind = 'transcription' | 'translation' | 'speech';

export interface ChargeContext {
  requestId: string;
  accountId: string;
  keyId: string;
}

export interface ChargeItem {
  model: string;
  kind: WorkKind;
  unit: UsageUnit;
  quantity: number;
}

export interface ChargeResult {
  /** The rows written, one per non-zero item, in item order. */
  records: NewUsageRecord[];
  /** The account's balance once this charge has landed. */
  balanceMicros: number;
}

export const INSUFFICIENT_QUOTA_MESSAGE =
  'You exceeded your current quota: your balance cannot cover this request. Add credit to your account.';

/** Absorbs float noise such as 0.1 * 3 = 0.30000000000000004 so that it is not rounded up a whole micro. */
const FLOAT_TOLERANCE = 1e-9;

export class Ledger {
  constructor(
    private readonly store: Store,
    private readonly prices: PriceTable,
  ) {}

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

  /**
   * Refuses work up front when the balance cannot cover its estimate. The final charge may still take
   * the balance below zero (the estimate is a floor, actual usage is known only afterwards); the next
   * request is then refused here.
   */
  async assertCanAfford(account: Account, estimatedMicros = 1): Promise<void> {
    if (account.balanceMicros <= 0 || account.balanceMicros < estimatedMicros) {
      throw new ApiError('insufficient_quota', INSUFFICIENT_QUOTA_MESSAGE);
    }
  }

  /**
   * Records the items and debits their total from the account, all in one store transaction: either
   * every row and the debit land, or none does. Zero-quantity items write nothing.
   */
  async charge(ctx: ChargeContext, items: ChargeItem[]): Promise<ChargeResult> {
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

    if (records.length === 0) {
      const account = await this.store.getAccount(ctx.accountId);
      if (!account) throw new Error(`Unknown account: ${ctx.accountId}`);
      return { records, balanceMicros: account.balanceMicros };
    }

    const { balances } = await this.store.recordUsage(records);
    const balanceMicros = balances[ctx.accountId];
    if (balanceMicros === undefined) throw new Error(`Store returned no balance for ${ctx.accountId}`);
    return { records, balanceMicros };
  }
}
