/**
 * The billing domain's errors. Billing knows nothing of HTTP: src/api/errors.ts maps these to statuses
 * (InsufficientQuotaError → 402 insufficient_quota) and to stream error events.
 */

export const INSUFFICIENT_QUOTA_MESSAGE = 'You exceeded your current quota: your balance cannot cover this request. Add credit to your account.';

/** The account's balance, less what requests in flight hold, cannot cover the work asked for. */
export class InsufficientQuotaError extends Error {
  constructor(
    readonly accountId: string,
    /** What the work needed held, in micros. */
    readonly neededMicros: number,
    /** What was available (balance − live holds) when it was refused. */
    readonly availableMicros: number,
  ) {
    super(INSUFFICIENT_QUOTA_MESSAGE);
    this.name = 'InsufficientQuotaError';
  }
}

/** An amount of money that is not a number of units with at most 6 decimals, too large, or negative where it may not be. */
export class InvalidAmountError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidAmountError';
  }
}
