/**
 * What one committed item costs, and its charge: the audio's seconds (rounded as REST rounds them) and,
 * in a translation session, the transcript's characters at the translation rate (what POST
 * /audio/translations charges). The cost is held before any work (the seconds exactly, the characters
 * estimated, then raised to the exact count before the translation runs) and settled when the item is
 * delivered; an item that is not delivered (client gone, failure) is released and costs nothing.
 */
import { billableCharacters, billableSeconds } from '../billing/metering.js';
import type { ChargeContext, ChargeItem, Ledger, Reservation } from '../billing/ledger.js';

/** Transcript characters per second of audio held before the transcript exists (brisk speech ≈ 15; demo voice 7). */
const HELD_CHARACTERS_PER_SECOND = 25;

export class ItemBilling {
  private reservation: Reservation | null = null;
  readonly seconds: number;
  private characters = 0;

  constructor(
    private readonly ledger: Ledger,
    private readonly ctx: ChargeContext,
    private readonly asrModel: string,
    /** The translation model's id when the item is translated. */
    private readonly mtModel: string | null,
    durationSeconds: number,
  ) {
    this.seconds = billableSeconds(durationSeconds);
  }

  /** Holds the item's cost; throws InsufficientQuotaError when the balance cannot cover it. */
  async hold(): Promise<void> {
    const estimate = this.mtModel ? Math.ceil(this.seconds * HELD_CHARACTERS_PER_SECOND) : 0;
    this.reservation = await this.ledger.reserve(this.ctx, this.secondsCost() + this.charactersCost(estimate));
  }

  /** Raises the hold to the exact cost of translating `transcript` (InsufficientQuotaError if it cannot). */
  async holdTranslation(transcript: string): Promise<void> {
    this.characters = billableCharacters(transcript);
    await this.reservation!.growTo(this.secondsCost() + this.charactersCost(this.characters));
  }

  /** Records the charge: the seconds, and the characters when `translated`. Returns the rows' items. */
  async settle(translated: boolean): Promise<ChargeItem[]> {
    const items: ChargeItem[] = [{ model: this.asrModel, kind: 'transcription', unit: 'second', quantity: this.seconds }];
    if (translated && this.mtModel) items.push({ model: this.mtModel, kind: 'translation', unit: 'character', quantity: this.characters });
    await this.reservation!.settle(items);
    return items;
  }

  /** Drops the hold, charging nothing; a no-op once settled. */
  async release(): Promise<void> {
    await this.reservation?.release();
  }

  get translatedCharacters(): number {
    return this.characters;
  }

  private secondsCost(): number {
    return this.ledger.costOf(this.seconds, this.ledger.priceOf('second', 'transcription'));
  }

  private charactersCost(characters: number): number {
    return this.ledger.costOf(characters, this.ledger.priceOf('character', 'translation'));
  }
}
