/**
 * `output_format` on the ElevenLabs-shaped routes (the speech sockets and POST /text-to-speech/{voice_id}):
 * a Kuma format name (`pcm`, `mp3`, `wav`, …) or an ElevenLabs one, resolved to the format encoded and,
 * for an ElevenLabs rate Kuma's own format does not have, the variant (codecs/formats.ts) that encodes it
 * there: the model's audio is resampled to the rate named, never refused for it.
 *
 *   pcm_<rate>               headerless s16le at that rate (8000–48000 Hz)
 *   mp3_<rate>_<kbit/s>      MP3 at that rate and constant bitrate (any MPEG Layer III pair)
 *   ulaw_8000, alaw_8000     G.711
 *   opus_48000_<kbit/s>      Kuma's Ogg/Opus (decoded at 48 kHz whatever the stream's rate; its own bitrate)
 *
 * Errors name `output_format` (the parameter these routes read), with the codes of the REST routes: a name
 * that is no format at all is 400 `invalid_value`; a known format the model does not serve is 422
 * `invalid_request`.
 */
import { formatInfo, isSpeechFormat, MP3_BITRATE_KBPS } from '../../codecs/formats.js';
import type { EncodingVariant, SpeechFormat } from '../../codecs/types.js';
import { JIFILI_FORMATS, LEGACY_FORMATS } from '../compat/speech-rules.js';
import { ApiError } from '../errors.js';
import { SPEECH_MODEL_ID } from '../../engines/model-ids.js';

export interface OutputFormat {
  /** The name asked for, as the client wrote it. */
  name: string;
  format: SpeechFormat;
  /** Set when the rate (or MP3 bitrate) differs from the format's own. */
  variant?: EncodingVariant;
  /** Content-Type of the audio. */
  mediaType: string;
  /** Sample rate of the audio. */
  sampleRate: number;
}

/** ElevenLabs' default on every route that takes `output_format`. */
export const ELEVENLABS_DEFAULT_FORMAT = 'mp3_44100_128';

/** The ElevenLabs names as ElevenLabs lists them, for messages and the docs (any other valid pair is served too). */
export const ELEVENLABS_FORMAT_NAMES = [
  'mp3_22050_32',
  'mp3_24000_48',
  'mp3_44100_32',
  'mp3_44100_64',
  'mp3_44100_96',
  'mp3_44100_128',
  'mp3_44100_192',
  'pcm_8000',
  'pcm_16000',
  'pcm_22050',
  'pcm_24000',
  'pcm_32000',
  'pcm_44100',
  'pcm_48000',
  'ulaw_8000',
  'alaw_8000',
  'opus_48000_32',
  'opus_48000_64',
  'opus_48000_96',
  'opus_48000_128',
  'opus_48000_192',
] as const;

const OPUS_BITRATES = new Set([32, 64, 96, 128, 192]);

/** The formats a model serves (those of POST /audio/speech). */
function servedBy(modelId: string): readonly SpeechFormat[] {
  return modelId === SPEECH_MODEL_ID ? JIFILI_FORMATS : LEGACY_FORMATS;
}

/**
 * An ElevenLabs name → format and variant; undefined when the name is not one (or names a pair no codec
 * has, such as `mp3_44100_8` or `pcm_96000`).
 */
export function parseElevenLabsFormat(name: string): { format: SpeechFormat; variant?: EncodingVariant } | undefined {
  const match = /^(pcm|mp3|ulaw|alaw|opus)_(\d{4,5})(?:_(\d{1,3}))?$/.exec(name);
  if (!match) return undefined;
  const [, codec, rateText, bitrateText] = match;
  const rate = Number(rateText);
  const bitrate = bitrateText === undefined ? undefined : Number(bitrateText);
  switch (codec) {
    case 'pcm':
      if (bitrate !== undefined) return undefined;
      return withVariant('pcm', { sampleRate: rate });
    case 'mp3':
      if (bitrate === undefined) return undefined;
      return withVariant('mp3', { sampleRate: rate, bitrateKbps: bitrate });
    case 'ulaw':
    case 'alaw':
      return rate === 8000 && bitrate === undefined ? { format: codec } : undefined;
    case 'opus':
      return rate === 48000 && bitrate !== undefined && OPUS_BITRATES.has(bitrate) ? { format: 'opus' } : undefined;
  }
  return undefined;
}

/** The variant when the codec can encode it, dropped when it is the format's own rate and bitrate. */
function withVariant(format: 'pcm' | 'mp3', variant: EncodingVariant): { format: SpeechFormat; variant?: EncodingVariant } | undefined {
  try {
    formatInfo(format, variant);
  } catch {
    return undefined;
  }
  const own = formatInfo(format);
  const ownBitrate = format === 'mp3' ? MP3_BITRATE_KBPS : undefined;
  if (variant.sampleRate === own.sampleRate && variant.bitrateKbps === ownBitrate) return { format };
  return { format, variant };
}

/** Resolves `output_format` for `modelId`; throws the ApiError the routes answer, naming `param` (the query parameter read). */
export function resolveOutputFormat(modelId: string, name: string, param = 'output_format'): OutputFormat {
  const parsed = isSpeechFormat(name) ? { format: name } : parseElevenLabsFormat(name);
  if (!parsed) {
    throw new ApiError(
      'invalid_value',
      `${param}: ${JSON.stringify(name)} is not a format; use an ElevenLabs name (${ELEVENLABS_FORMAT_NAMES.join(', ')}) or one of ${servedBy(modelId).join(', ')}.`,
      { param },
    );
  }
  const served = servedBy(modelId);
  if (!served.includes(parsed.format)) {
    throw new ApiError(
      'invalid_request',
      `${param}: ${modelId} does not serve ${name}; use an ElevenLabs pcm, mp3, ulaw, alaw or opus name, or one of ${served.join(', ')}.`,
      { param },
    );
  }
  const info = formatInfo(parsed.format, parsed.variant);
  return { name, ...parsed, mediaType: info.mediaType, sampleRate: info.sampleRate };
}
