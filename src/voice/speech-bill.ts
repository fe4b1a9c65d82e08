/**
 * The bill of one utterance of streamed text (README "Speech"): a hold grown by each phrase's price before
 * the phrase is queued, and a charge of exactly the characters whose audio was delivered.
 *
 * - Hold: one reservation per utterance, opened empty at its first phrase and grown by each phrase's price
 *   (Reservation.growBy); a balance that cannot cover the next phrase throws InsufficientQuotaError and the
 *   phrase is not spoken. Speech is priced per character, a whole number of micros each, so growing by each
 *   phrase holds exactly the price of all of them.
 * - Delivered: the owner says how many characters' audio has been delivered (cumulative; a speech socket once
 *   a phrase's audio was written to the network, a call once a phrase's frames all went to the carrier).
 * - Charge: `chargeDelivered()` charges what was delivered and not yet charged now, taking it off the hold
 *   (Reservation.settlePart): a speech socket does so after every phrase, so a crash loses at most the phrase
 *   in flight. `close()` charges the rest delivered and drops the hold, however the utterance ended — so what
 *   is charged is always the characters delivered, never a phrase cut off before it went out.
 *
 * Charges after the key's revocation are refused by the store (KeyRevokedError): logged, never thrown, as is
 * any failure to record a delivered phrase (delivered, not charged — the side the ledger errs on).
 */
import type { ChargeContext, Ledger, Reservation } from '../billing/ledger.js';
import type { Logger } from '../observability/logger.js';
import { KeyRevokedError } from '../store/store-errors.js';

export interface BillSetup {
  ledger: Ledger;
  charge: ChargeContext;
  /** The model whose speech is charged. */
  model: string;
  logger: Logger;
  /** What the speech is called in logs ('speech socket phrase', 'call speech'). */
  label: string;
}

export class SpeechBill {
  private reservation: Reservation | null = null;
  private delivered = 0;
  private charged = 0;

  constructor(private readonly setup: BillSetup) {}

  /** Grows the hold by the price of `characters`; throws InsufficientQuotaError when the balance cannot cover it. */
  async hold(characters: number): Promise<void> {
    const { ledger, charge } = this.setup;
    this.reservation ??= await ledger.reserve(charge, 0);
    // growBy, not a running total: delivered phrases may have left the hold already (settlePart).
    await this.reservation.growBy(ledger.costOf(characters, ledger.priceOf('character', 'speech')));
  }

  /** The audio of the first `characters` characters has been delivered. */
  deliver(characters: number): void {
    this.delivered = Math.max(this.delivered, characters);
  }

  /** Characters whose audio was delivered so far: what the utterance is charged in the end. */
  get deliveredCharacters(): number {
    return this.delivered;
  }

  /** Charges what was delivered and not yet charged, now; the rest stays held. */
  async chargeDelivered(): Promise<void> {
    const quantity = this.delivered - this.charged;
    if (quantity <= 0 || !this.reservation?.isOpen) return;
    this.charged = this.delivered;
    try {
      await this.reservation.settlePart([this.item(quantity)]);
    } catch (err) {
      this.logFailure(err);
    }
  }

  /** Charges the rest of what was delivered and drops the hold: nothing stays held, nothing undelivered is charged. */
  async close(): Promise<void> {
    const reservation = this.reservation;
    if (!reservation?.isOpen) return;
    const quantity = this.delivered - this.charged;
    this.charged = this.delivered;
    if (quantity <= 0) {
      const { logger, charge, label } = this.setup;
      return reservation.release().catch((err: Error) => logger.error({ requestId: charge.requestId, err: err.message }, `releasing the ${label} hold failed`));
    }
    try {
      await reservation.settle([this.item(quantity)]);
    } catch (err) {
      this.logFailure(err);
    }
  }

  private item(quantity: number) {
    return { model: this.setup.model, kind: 'speech' as const, unit: 'character' as const, quantity };
  }

  private logFailure(err: unknown): void {
    const { logger, charge, label } = this.setup;
    // The key was revoked before this speech was charged: by design nothing more is charged to it.
    if (err instanceof KeyRevokedError) logger.info({ requestId: charge.requestId, keyId: err.keyId }, `${label} not charged: the key was revoked`);
    else logger.error({ requestId: charge.requestId, err: (err as Error).message }, `recording ${label} usage failed: delivered, not charged`);
  }
}
