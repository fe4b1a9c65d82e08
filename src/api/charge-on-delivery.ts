/**
 * Charging a REST response on delivery (README "Accounts, keys and prices"): a route that holds a
 * reservation hands it to its result's `onDelivered` instead of settling before it answers, and the
 * transport calls that once the response is over. Delivered (complete, its last bytes written to the
 * network): the charge is settled. Not delivered (client gone, stalled, stream cut): the hold is released
 * and nothing is charged. A settlement that fails after delivery is logged — delivered, not charged — and
 * never turned into an error for a client that already has its answer.
 *
 * Why after, not before: a charge recorded before the answer was written left a usage row for an answer the
 * client never got whenever the process died in between (SIGKILL: 2 of 1,281 REST requests). Recorded after,
 * a crash in between leaves the delivered answer uncharged — the side the ledger errs on.
 */
import type { ChargeItem, Reservation } from '../billing/ledger.js';
import type { Logger } from '../observability/logger.js';

export interface DeliveryLog {
  logger: Logger;
  requestId: string;
}

/** Settles `reservation` to `items()` when delivered, releases it otherwise. */
export function chargeOnDelivery(reservation: Reservation, items: () => readonly ChargeItem[], log: DeliveryLog): (delivered: boolean) => Promise<void> {
  return async (delivered) => {
    if (!delivered) return reservation.release();
    await settleDelivered(reservation, items(), log);
  };
}

/** Settles a delivered response's charge; a failure is logged (delivered, not charged), never thrown. */
export async function settleDelivered(reservation: Reservation, items: readonly ChargeItem[], log: DeliveryLog): Promise<void> {
  try {
    await reservation.settle(items);
  } catch (err) {
    log.logger.error({ requestId: log.requestId, err: (err as Error).message }, 'recording usage failed: delivered, not charged');
  }
}
