/**
 * What a realtime session is configured with, independent of the wire shape (GA `session.update`, beta
 * `transcription_session.update`, translation `session.update`): the input audio format, the speech model
 * and its options, an optional translation target, and turn detection (server_vad or manual commits).
 */
import type { ModelEngine } from '../engines/runtime/model-engine.js';
import type { ServerVadOptions } from './vad/contract.js';
import { RealtimeInputError } from './errors.js';

export type InputCodec = 'pcm16' | 'g711_ulaw' | 'g711_alaw';

export interface InputFormat {
  codec: InputCodec;
  /** Samples per second of the client's audio: 8000 for G.711; 24000 for pcm16 (GA and beta), or a Kuma extra rate. */
  rate: number;
}

/**
 * pcm16 rates accepted. OpenAI allows only 24000; 8000, 16000 and 48000 are a Kuma extension (telephony and
 * browser capture rates) that costs nothing more, since the input is resampled to the models' 16 kHz anyway.
 */
export const PCM16_RATES: readonly number[] = [8000, 16000, 24000, 48000];

export const DEFAULT_FORMAT: InputFormat = { codec: 'pcm16', rate: 24000 };

export interface TurnDetectionConfig extends ServerVadOptions {
  /** Scored audio without speech after which a `timeout_triggered` item is committed; null = never. */
  idleTimeoutMs: number | null;
}

/** OpenAI's server_vad defaults. */
export const DEFAULT_SERVER_VAD: TurnDetectionConfig = { threshold: 0.5, prefixPaddingMs: 300, silenceDurationMs: 500, idleTimeoutMs: null };

/**
 * Translation targets: only the translation model's own codes. ISO 639-1 `en`/`fr` stay source-language
 * hints (ignored: the source is Bambara), because voice frameworks send `language: "en"` by default and a
 * transcription session must not turn into a translation one behind their back.
 */
const TARGETS: Record<string, TranslationTarget> = { fra_Latn: 'fra_Latn', eng_Latn: 'eng_Latn' };
/**
 * Once the client named the translation model as its transcription model it asked for translation, so ISO
 * 639-1 codes name the target too — the only codes some clients can send (LiveKit's OpenAI plugin rewrites
 * `fra_Latn` to `fr`).
 */
const TARGETS_WHEN_ASKED: Record<string, TranslationTarget> = { ...TARGETS, fr: 'fra_Latn', en: 'eng_Latn' };
const DEFAULT_TARGET: TranslationTarget = 'eng_Latn';
export type TranslationTarget = 'fra_Latn' | 'eng_Latn';

/** The speech model as resolved by the API layer (catalog id and its engine). */
export interface SpeechModel {
  id: string;
  engine: ModelEngine;
}

export interface SessionConfig {
  format: InputFormat;
  /** No model = transcription not configured yet: audio is refused until one is set. */
  model: SpeechModel | null;
  /** The source language hint as sent (Bambara is the only source; kept to echo back). */
  language: string | null;
  prompt: string | null;
  /** Set: each turn's transcript is also translated into this language. */
  target: TranslationTarget | null;
  /**
   * The translation model the client named as its transcription model (then `model` is the speech model that
   * hears, every item is translated, and `language` names the target in either code, English when absent).
   */
  translationModel?: string | null;
  /** null = manual commits (`turn_detection: null`). */
  turnDetection: TurnDetectionConfig | null;
}

/** A partial update as parsed from any wire shape; absent fields keep their value, `null` turns a feature off. */
export interface SessionUpdate {
  format?: InputFormat;
  model?: SpeechModel;
  /** With `model`: the translation model named in its place (null: a speech model was named). */
  translationModel?: string | null;
  language?: string | null;
  /**
   * The translation target itself, for a caller that knows it (a phone call's app language), where clients
   * name it through `language`; null turns translation off. Applied after `language`.
   */
  translationTarget?: TranslationTarget | null;
  prompt?: string | null;
  turnDetection?: Partial<TurnDetectionConfig> | null;
}

/** `language` → a translation target, or null when it names no target (then it is a source-language hint). */
export function translationTargetOf(language: string | null | undefined): TranslationTarget | null {
  return language ? (TARGETS[language] ?? null) : null;
}

/** The target a configuration asks for (RealtimeInputError for a language that names none once translation was asked for). */
export function targetOf(config: Pick<SessionConfig, 'language' | 'translationModel'>): TranslationTarget | null {
  if (!config.translationModel) return translationTargetOf(config.language);
  if (!config.language) return DEFAULT_TARGET;
  const target = TARGETS_WHEN_ASKED[config.language];
  if (!target)
    throw new RealtimeInputError(
      'invalid_value',
      `The transcription model ${config.translationModel} translates into fr (fra_Latn) or en (eng_Latn), not ${JSON.stringify(config.language).slice(0, 40)}.`,
      'session.audio.input.transcription.language',
    );
  return target;
}

export function validateFormat(format: InputFormat): InputFormat {
  const ok = format.codec === 'pcm16' ? PCM16_RATES.includes(format.rate) : format.rate === 8000;
  if (!ok) {
    const allowed = format.codec === 'pcm16' ? PCM16_RATES.join(', ') : '8000';
    throw new RealtimeInputError(
      'unsupported_audio_format',
      `The input audio format ${format.codec} at ${format.rate} Hz is not supported; rates: ${allowed}.`,
      'session.audio.input.format',
    );
  }
  return format;
}

function validateVad(vad: TurnDetectionConfig): TurnDetectionConfig {
  const bad = (param: string, rule: string) =>
    new RealtimeInputError('invalid_value', `turn_detection.${param} must be ${rule}.`, `session.turn_detection.${param}`);
  if (!(vad.threshold >= 0 && vad.threshold <= 1)) throw bad('threshold', 'between 0 and 1');
  if (!(vad.prefixPaddingMs >= 0 && vad.prefixPaddingMs <= 10_000)) throw bad('prefix_padding_ms', 'between 0 and 10000');
  if (!(vad.silenceDurationMs >= 32 && vad.silenceDurationMs <= 10_000)) throw bad('silence_duration_ms', 'between 32 and 10000');
  if (vad.idleTimeoutMs !== null && !(vad.idleTimeoutMs >= 1000 && vad.idleTimeoutMs <= 600_000))
    throw bad('idle_timeout_ms', 'between 1000 and 600000, or null');
  return vad;
}

/** The configuration after `update`; throws RealtimeInputError (and changes nothing) when a value is refused. */
export function applyUpdate(config: SessionConfig, update: SessionUpdate): SessionConfig {
  const next: SessionConfig = { ...config };
  if (update.format) next.format = validateFormat(update.format);
  if (update.model) next.model = update.model;
  if (update.translationModel !== undefined) next.translationModel = update.translationModel;
  if (update.language !== undefined) next.language = update.language;
  if (update.language !== undefined || update.translationModel !== undefined) next.target = targetOf(next);
  if (update.translationTarget !== undefined) next.target = update.translationTarget;
  if (update.prompt !== undefined) next.prompt = update.prompt;
  if (update.turnDetection === null) next.turnDetection = null;
  else if (update.turnDetection) next.turnDetection = validateVad({ ...(config.turnDetection ?? DEFAULT_SERVER_VAD), ...definedOnly(update.turnDetection) });
  return next;
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
