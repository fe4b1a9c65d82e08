/**
 * `model_id` and `voice_id` on the ElevenLabs-shaped routes, so that an ElevenLabs client works with its
 * own defaults by changing only its base URL: ElevenLabs' model ids (`eleven_turbo_v2_5`,
 * `eleven_multilingual_v2`, … — every id starting `eleven_`) stand for jifili-1, Kuma's streaming voice;
 * an ElevenLabs voice id (20 letters and digits, such as LiveKit's default `bIHbv24MWmeRgasZH58o`) speaks
 * with the model's default voice. Kuma's own model ids and voice names keep their meaning, and anything
 * else is refused as on POST /audio/speech (so a typo in a Kuma voice name is not silently another voice).
 */
import { SPEECH_MODEL_ID } from '../../engines/model-ids.js';

/** The model all ElevenLabs model ids stand for, and the default when none is given. */
export const ELEVENLABS_STAND_IN_MODEL = SPEECH_MODEL_ID;

const ELEVENLABS_VOICE_ID = /^[A-Za-z0-9]{20}$/;

/** The Kuma model id for an ElevenLabs route's `model_id` (absent, empty or `eleven_*` → jifili-1). */
export function kumaModelId(requested: string | null | undefined): string {
  if (!requested || requested.startsWith('eleven_')) return ELEVENLABS_STAND_IN_MODEL;
  return requested;
}

/** The voice to ask the model for: undefined (its default) for an ElevenLabs voice id, else the name as given. */
export function kumaVoice(voiceId: string | null | undefined): string | undefined {
  if (!voiceId || ELEVENLABS_VOICE_ID.test(voiceId)) return undefined;
  return voiceId;
}
