/**
 * The price table: what one unit of each kind of work costs, in micro-units (1 unit = 1_000_000 micros,
 * think of a unit as one US dollar). Defaults are documented in the README; operators override them with
 * KUMA_PRICE_* variables. It is configuration (src/config/config.ts reads it); the ledger in src/billing
 * charges by it.
 */
import { z } from 'zod';

export const PriceTableSchema = z.object({
  /** Speech to text, per second of audio (100 micros/s = 0.006 per minute). */
  transcriptionPerSecond: z.number().int().nonnegative().default(100),
  /** Text translation, per character of input (20 micros = 20 per million characters). */
  translationPerCharacter: z.number().int().nonnegative().default(20),
  /** Text translation on models billed in tokens (djelia-translate-v2), per token. */
  translationPerToken: z.number().int().nonnegative().default(60),
  /** Text to speech, per character of input (15 micros = 15 per million characters). */
  speechPerCharacter: z.number().int().nonnegative().default(15),
});

export type PriceTable = z.infer<typeof PriceTableSchema>;

export const MICROS_PER_UNIT = 1_000_000;
