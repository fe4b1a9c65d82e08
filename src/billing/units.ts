/**
 * Money as people write it ("12.50" units) and as the ledger keeps it (integer micros). Shared by the keys
 * CLI and the admin API so that both accept and print amounts the same way; a bad amount is an
 * InvalidAmountError, which each caller turns into its own kind of refusal (a usage error, a 400).
 */
import { InvalidAmountError } from './errors.js';
import { MICROS_PER_UNIT } from '../config/prices.js';

const AMOUNT_PATTERN = /^(-)?(\d+)(?:\.(\d{1,6}))?$/;

/** "2.5" → 2_500_000 micros, in integer arithmetic so that no amount is off by a float rounding. */
export function parseUnits(text: string, { allowNegative = false } = {}): number {
  const match = AMOUNT_PATTERN.exec(text.trim());
  if (!match) throw new InvalidAmountError(`Invalid amount "${text}": expected a number of units with at most 6 decimals, e.g. 10 or 2.5`);
  const [, minus, whole, fraction = ''] = match;
  const magnitude = Number(whole) * MICROS_PER_UNIT + Number(fraction.padEnd(6, '0'));
  if (!Number.isSafeInteger(magnitude)) throw new InvalidAmountError(`Amount "${text}" is too large`);
  if (minus && !allowNegative) throw new InvalidAmountError(`Amount "${text}" must not be negative`);
  // -0 would print as "0.00" but compare oddly with Object.is; an amount of minus nothing is nothing.
  return minus && magnitude !== 0 ? -magnitude : magnitude;
}

/** 2_500_000 micros → "2.50"; keeps every significant micro ("0.000123") and at least two decimals. */
export function formatUnits(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_UNIT);
  const fraction = String(abs % MICROS_PER_UNIT)
    .padStart(6, '0')
    .replace(/0{1,4}$/, '');
  return `${sign}${whole}.${fraction}`;
}
