/** Amounts in units ↔ integer micros, shared by the keys CLI and the admin API: exact both ways, and what is refused. */
import { describe, expect, it } from 'vitest';
import { InvalidAmountError } from '../../../src/billing/errors.js';
import { formatUnits, parseUnits } from '../../../src/billing/units.js';

describe('parseUnits / formatUnits', () => {
  it('converts units to micros exactly and back', () => {
    expect(parseUnits('10')).toBe(10_000_000);
    expect(parseUnits('2.5')).toBe(2_500_000);
    expect(parseUnits(' 12.50 ')).toBe(12_500_000);
    expect(parseUnits('0.000001')).toBe(1);
    expect(parseUnits('-2.25', { allowNegative: true })).toBe(-2_250_000);
    expect(Object.is(parseUnits('-0', { allowNegative: true }), 0)).toBe(true);
    expect(formatUnits(2_500_000)).toBe('2.50');
    expect(formatUnits(123)).toBe('0.000123');
    expect(formatUnits(-1_234_500)).toBe('-1.2345');
    expect(formatUnits(0)).toBe('0.00');
  });

  it('round-trips every amount it prints', () => {
    for (const micros of [0, 1, 10, 999_999, 1_000_000, 12_345_678, -7, -3_000_001, Number.MAX_SAFE_INTEGER]) {
      expect(parseUnits(formatUnits(micros), { allowNegative: true })).toBe(micros);
    }
  });

  it('refuses malformed, over-precise, too large and (unless allowed) negative amounts with an InvalidAmountError', () => {
    for (const bad of ['', 'abc', '1e3', '1.2345678', '1,5', '--1', '+1', '.5']) {
      expect(() => parseUnits(bad)).toThrow(InvalidAmountError);
      expect(() => parseUnits(bad)).toThrow(/Invalid amount/);
    }
    expect(() => parseUnits('99999999999999999999')).toThrow(/too large/);
    expect(() => parseUnits('-1')).toThrow(/negative/);
  });
});
