/**
 * A call's settings, as its token (and, where the token allows, the call's own parameters) gives them, and
 * the phone leg's audio formats as the speech pipeline names them.
 */
import type { SpeechFormat } from '../../codecs/types.js';
import type { CallAudioFormat } from '../carriers/contract.js';

/** The language the application speaks: Bambara, or French/English through Kuma's translation. */
export type AppLanguage = 'bam' | 'fra' | 'eng';

/** What may interrupt the voice (ConversationRelay's `interruptible`). */
export type Interruptible = 'none' | 'dtmf' | 'speech' | 'any';

export interface CallSettings {
  mode: 'transcription' | 'relay';
  relayUrl: string | null;
  transcriptionLanguage: AppLanguage;
  ttsLanguage: AppLanguage;
  welcomeGreeting: string | null;
  welcomeGreetingInterruptible: boolean;
  interruptible: Interruptible;
}

/** The ConversationRelay-style tag of a language (what `lang` carries to the app). */
export const LANGUAGE_TAGS: Record<AppLanguage, string> = { bam: 'bm-ML', fra: 'fr-FR', eng: 'en-US' };

/** A language tag or code (`fr-FR`, `fr`, `fra`, `fra_Latn`, `bm`, …) → the app language, or null. */
export function appLanguageOf(tag: string | null | undefined): AppLanguage | null {
  if (!tag) return null;
  const primary = tag.toLowerCase().split(/[-_]/)[0];
  if (primary === 'bm' || primary === 'bam') return 'bam';
  if (primary === 'fr' || primary === 'fra' || primary === 'fre') return 'fra';
  if (primary === 'en' || primary === 'eng') return 'eng';
  return null;
}

/** The speech format that encodes straight to the phone leg's bytes. */
export function callSpeechFormat(format: CallAudioFormat): SpeechFormat {
  if (format.codec === 'pcmu') return 'ulaw';
  if (format.codec === 'pcma') return 'alaw';
  return format.sampleRate === 16000 ? 'l16_16000' : 'l16_8000';
}

/** The byte value of silence: G.711 μ-law 0xFF, A-law 0xD5, linear PCM 0. */
export function silenceByteOf(format: CallAudioFormat): number {
  if (format.codec === 'pcmu') return 0xff;
  if (format.codec === 'pcma') return 0xd5;
  return 0;
}
