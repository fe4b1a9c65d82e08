/**
 * The per-call settings a call token carries and a call may change: the application's languages and how
 * the caller may interrupt. Languages arrive in Kuma's codes (bam, fra, eng) or, from applications written
 * for ConversationRelay, as BCP-47 tags (fr-FR, en-US, bm-ML); both are normalised to Kuma's codes.
 */

/** The language the application reads prompts in / writes its replies in; the caller always speaks Bambara. */
export type CallLanguage = 'bam' | 'fra' | 'eng';
export const CALL_LANGUAGES: readonly CallLanguage[] = ['bam', 'fra', 'eng'];
export const DEFAULT_CALL_LANGUAGE: CallLanguage = 'bam';

/** ConversationRelay's `interruptible`: which caller input stops playback. */
export type Interruptible = 'none' | 'dtmf' | 'speech' | 'any';
export const INTERRUPTIBLE_VALUES: readonly Interruptible[] = ['none', 'dtmf', 'speech', 'any'];
export const DEFAULT_INTERRUPTIBLE: Interruptible = 'any';

export type CallMode = 'transcription' | 'relay';
export const CALL_MODES: readonly CallMode[] = ['transcription', 'relay'];

/** Primary language subtags (ISO 639-1, 639-2/B and 639-3) → Kuma's code. */
const PRIMARY_TAGS: Record<string, CallLanguage> = {
  bam: 'bam',
  bm: 'bam',
  fra: 'fra',
  fre: 'fra',
  fr: 'fra',
  eng: 'eng',
  en: 'eng',
};

/**
 * `fr-FR`, `en_US`, `bm-ML`, `fra_Latn`, `FR`… → the language, or undefined when it is none of the three.
 * Only the primary subtag counts: a region or script cannot change which model serves the call.
 */
export function normaliseCallLanguage(tag: string): CallLanguage | undefined {
  const primary = tag.trim().split(/[-_]/)[0]!.toLowerCase();
  return Object.hasOwn(PRIMARY_TAGS, primary) ? PRIMARY_TAGS[primary] : undefined;
}

export const LANGUAGE_HINT = 'use bam, fra or eng (or a tag such as bm-ML, fr-FR, en-US)';

/** The ConversationRelay-style tag of a language (what `lang` carries to the app). */
export const LANGUAGE_TAGS: Record<CallLanguage, string> = { bam: 'bm-ML', fra: 'fr-FR', eng: 'en-US' };

/** How one call behaves: from its token, and where the token allows it, the call's own parameters. */
export interface CallSettings {
  mode: CallMode;
  relayUrl: string | null;
  transcriptionLanguage: CallLanguage;
  ttsLanguage: CallLanguage;
  welcomeGreeting: string | null;
  welcomeGreetingInterruptible: boolean;
  interruptible: Interruptible;
}
