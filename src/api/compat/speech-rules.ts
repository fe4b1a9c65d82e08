/**
 * Per-model rules of POST /audio/speech (SPEC §4.5, §9; PROTOCOLS §5): which formats and voices each model
 * serves, and how voice, description and speaker select the engine's speaker. jifili-1 answers 422
 * invalid_request for a format it does not serve (any name, known or not) and 400 unsupported_voice for a
 * voice other than moussa and its aliases; the legacy models answer 400 for a format their encoder lacks.
 * Text a voice cannot say is 400 invalid_value (param input) before any synthesis or charge.
 */
import { SPEECH_FORMATS, type SpeechFormat } from '../../codecs/types.js';
import { describeChar, speechText } from '../../engines/tts/speech-text.js';
import { ApiError } from '../errors.js';
import { SPEECH_MODEL_ID } from '../../engines/model-ids.js';

export const JIFILI_FORMATS: readonly SpeechFormat[] = ['mp3', 'wav', 'pcm', 'opus', 'ulaw', 'alaw', 'l16_8000', 'l16_16000', 'fmp4'];
export const LEGACY_FORMATS: readonly SpeechFormat[] = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm', 'wav_8k', 'ulaw_8k'];
export const JIFILI_MAX_INPUT = 1000;

const VOICES = ['moussa', 'sekou', 'seydou'] as const;
type Voice = (typeof VOICES)[number];
/** Voice aliases; jifili-1 takes only the first three (→ moussa). */
const ALIASES: Record<string, Voice> = {
  alloy: 'moussa',
  nova: 'moussa',
  coral: 'moussa',
  echo: 'sekou',
  onyx: 'sekou',
  ash: 'sekou',
  sage: 'sekou',
  fable: 'seydou',
  shimmer: 'seydou',
  ballad: 'seydou',
  verse: 'seydou',
};
/** Speaker index of each voice on a multi-speaker engine. */
const SPEAKER: Record<Voice, number> = { moussa: 0, sekou: 1, seydou: 2 };

/**
 * The format a model is asked for. jifili-1 answers 422 invalid_request for every name it does not serve,
 * known or not, as its API is documented to; the legacy models 400 invalid_value. Either way the message
 * says whether the name is a speech format at all and lists what the model serves.
 */
export function checkFormat(modelId: string, format: string): SpeechFormat {
  const served = modelId === SPEECH_MODEL_ID ? JIFILI_FORMATS : LEGACY_FORMATS;
  if ((served as readonly string[]).includes(format)) return format as SpeechFormat;
  const known = (SPEECH_FORMATS as readonly string[]).includes(format);
  const problem = known ? `${modelId} does not serve ${format}` : `${JSON.stringify(format)} is not a speech format`;
  const message = `response_format: ${problem}; ${modelId} serves ${served.join(', ')}.`;
  throw new ApiError(modelId === SPEECH_MODEL_ID ? 'invalid_request' : 'invalid_value', message, { param: 'response_format' });
}

function resolveVoice(voice: string): Voice | undefined {
  const name = voice.trim().toLowerCase();
  return (VOICES as readonly string[]).includes(name) ? (name as Voice) : ALIASES[name];
}

/**
 * The engine speaker for a request, or undefined for the model's default. jifili-1 serves moussa only;
 * djelia-tts-v2 takes the voice, or a description naming Moussa, Sekou or Seydou (which overrides it);
 * djelia-tts-v1 takes the numeric `speaker` (default 1) and ignores voice.
 */
export function selectSpeaker(
  modelId: string,
  vendor: string,
  voice: string | undefined,
  options: { description?: string | null; speaker?: number },
): number | undefined {
  if (modelId === SPEECH_MODEL_ID) {
    if (voice !== undefined && !['moussa', 'alloy', 'nova', 'coral'].includes(voice.trim().toLowerCase())) {
      throw new ApiError('unsupported_voice', `voice: jifili-1 serves the voice moussa (also called alloy, nova or coral), not ${voice}.`, { param: 'voice' });
    }
    return undefined;
  }
  if (voice !== undefined && !resolveVoice(voice)) {
    throw new ApiError('unsupported_voice', `voice: ${voice} is not a voice of ${modelId}; use moussa, sekou or seydou.`, { param: 'voice' });
  }
  if (modelId === `${vendor}-tts-v1`) return options.speaker ?? 1;
  if (options.description) {
    const named = /\b(moussa|sekou|seydou)\b/i.exec(options.description)?.[1]?.toLowerCase() as Voice | undefined;
    return SPEAKER[named ?? 'moussa'];
  }
  return voice ? SPEAKER[resolveVoice(voice)!] : undefined;
}

/** Names at most this many offending characters in a message. */
const NAMED_CHARACTERS = 8;

/**
 * 400 invalid_value (param `input`) for text the loaded voice cannot say: characters no rule of
 * speech-text.ts speaks (emoji, symbols, letters the voice lacks, control characters, lone surrogates), or
 * nothing to say at all (only punctuation). `alphabet` is what the voice's runner reports in its info; an
 * engine that reports none (a custom TTS runner) is left to check its own input.
 */
export function checkSpeakable(modelId: string, alphabet: unknown, input: string): void {
  if (typeof alphabet !== 'string') return;
  const { text, unspeakable } = speechText(input, new Set(alphabet));
  if (unspeakable.length) {
    const named = unspeakable.slice(0, NAMED_CHARACTERS).map(describeChar).join(', ');
    const more = unspeakable.length > NAMED_CHARACTERS ? ` and ${unspeakable.length - NAMED_CHARACTERS} more` : '';
    throw new ApiError('invalid_value', `input: ${modelId} cannot pronounce ${named}${more}; remove them or write them out in words.`, { param: 'input' });
  }
  if (!text)
    throw new ApiError('invalid_value', `input: there is nothing ${modelId} can say in this text (only punctuation or invisible characters).`, {
      param: 'input',
    });
}
