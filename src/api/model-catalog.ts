/**
 * The served model ids (SPEC §1, §9; PROTOCOLS §5): the three canonical models, the aliases that resolve
 * to them, and the legacy ids that keep their own behaviour until the retirement date, after which they
 * answer 404 model_not_found. The vendor name prefixes the legacy ids; the clock is injectable so the
 * calendar can be tested on both sides of the date.
 */
import { SPEECH_MODEL_ID, TRANSCRIPTION_MODEL_ID, TRANSLATION_MODEL_ID } from '../engines/model-ids.js';

export type Capability = 'transcription' | 'speech' | 'translation';

export interface CatalogModel {
  /** The id responses report: canonical for aliases, the legacy id itself for legacy models. */
  id: string;
  capability: Capability;
  /** A legacy model with its own behaviour, served until the retirement date. */
  legacy: boolean;
}

export interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

/** `created` default of SPEC §2.1 (2025-01-01T00:00:00Z). */
export const MODEL_CREATED = 1735689600;

export type Clock = () => Date;

export class ModelCatalog {
  private readonly canonical: CatalogModel[];
  private readonly legacy: CatalogModel[];
  private readonly aliases: Map<string, string>;
  /** The retirement day's first instant (UTC), compared as a number: no date formatting per request. */
  private readonly retiresAtMs: number;

  constructor(
    private readonly vendor: string,
    /** ISO date (YYYY-MM-DD, UTC): from this day on the legacy ids (and the native routes) are gone. */
    readonly retirementDate: string,
    private readonly clock: Clock = () => new Date(),
  ) {
    this.retiresAtMs = Date.parse(`${retirementDate}T00:00:00Z`);
    this.canonical = [
      { id: TRANSCRIPTION_MODEL_ID, capability: 'transcription', legacy: false },
      { id: SPEECH_MODEL_ID, capability: 'speech', legacy: false },
      { id: TRANSLATION_MODEL_ID, capability: 'translation', legacy: false },
    ];
    this.legacy = [
      { id: `${vendor}-asr-v1`, capability: 'transcription', legacy: true },
      { id: `${vendor}-asr-v2`, capability: 'transcription', legacy: true },
      { id: `${vendor}-tts-v1`, capability: 'speech', legacy: true },
      { id: `${vendor}-tts-v2`, capability: 'speech', legacy: true },
      { id: `${vendor}-translate-v2`, capability: 'translation', legacy: true },
    ];
    this.aliases = new Map([
      [`${vendor}-asr-v3`, TRANSCRIPTION_MODEL_ID],
      ['whisper-1', TRANSCRIPTION_MODEL_ID],
      ['gpt-4o-transcribe', TRANSCRIPTION_MODEL_ID],
      ['gpt-4o-mini-transcribe', TRANSCRIPTION_MODEL_ID],
      [`${vendor}-tts-v3`, SPEECH_MODEL_ID],
      ['tts-1', SPEECH_MODEL_ID],
      ['tts-1-hd', SPEECH_MODEL_ID],
      ['gpt-4o-mini-tts', SPEECH_MODEL_ID],
      [`${vendor}-translate-v1`, TRANSLATION_MODEL_ID],
    ]);
  }

  /** The retirement day's first instant (UTC): the `Sunset` of everything it retires. */
  retiresAt(): Date {
    return new Date(this.retiresAtMs);
  }

  /** The canonical model that replaces a legacy id (retired or not), or undefined for any other id. */
  replacementOf(id: string): string | undefined {
    const legacy = this.legacy.find((m) => m.id === id);
    return legacy ? this.canonical.find((m) => m.capability === legacy.capability)?.id : undefined;
  }

  /** True from the retirement date (UTC) on. */
  legacyRetired(): boolean {
    return this.clock().getTime() >= this.retiresAtMs;
  }

  /** True for a legacy id past its retirement date (its requests answer 404); false for every other id. */
  isRetired(id: string): boolean {
    return this.legacyRetired() && this.legacy.some((m) => m.id === id);
  }

  /** Canonical models, plus the legacy ones while they are still served. Aliases are not listed twice. */
  list(): CatalogModel[] {
    return this.legacyRetired() ? [...this.canonical] : [...this.canonical, ...this.legacy];
  }

  /** Resolves an id or alias; undefined for unknown ids and for legacy ids past retirement. */
  resolve(id: string): CatalogModel | undefined {
    const target = this.aliases.get(id) ?? id;
    const canonical = this.canonical.find((m) => m.id === target);
    if (canonical) return canonical;
    if (this.legacyRetired()) return undefined;
    return this.legacy.find((m) => m.id === target);
  }

  toObject(model: CatalogModel): ModelObject {
    return { id: model.id, object: 'model', created: MODEL_CREATED, owned_by: this.vendor };
  }
}
