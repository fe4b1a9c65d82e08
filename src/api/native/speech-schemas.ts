/**
 * Request schemas of the native TTS routes (SPEC §2.7, §4.7, §8; PROTOCOLS §6), with the bounds the spec
 * leaves open decided here:
 * - `text`: a non-empty string. /v1/models/tts takes any length the primary surface takes for its model
 *   (djelia-tts-v1 has no character bound on POST /audio/speech; the JSON body limit applies); the v2
 *   routes take at most 1000 characters (code points) — jifili-1's bound on the primary surface, and the
 *   bound both Djelia SDKs check before sending a v2 request.
 * - `speaker` (v1): optional, an integer 0–4; absent or null is 1, the Djelia SDKs' default (and SPEC §2.5's).
 * - `description` (v2): required (PROTOCOLS §6), at most 500 characters (SPEC §8).
 * - `format` (v2): mp3 (default, also for null), wav, wav_8k, ulaw_8k.
 * - `chunk_size` (v2 stream): 0.1–2.0 seconds, default 1.0 (also for null: the Python SDK's field is optional).
 * Fields the routes do not use (e.g. `chunk_size` sent to /v2/models/tts by the JS SDK) are ignored.
 */
import { z } from 'zod';
import { billableCharacters } from '../../billing/metering.js';

export const NATIVE_TTS_FORMATS = ['mp3', 'wav', 'wav_8k', 'ulaw_8k'] as const;
export const V2_MAX_TEXT = 1000;
export const MAX_DESCRIPTION = 500;

const Text = z.string().min(1);

/** At most `max` characters counted as code points (as pydantic counts them), reported as pydantic does. */
function boundedText(max: number) {
  return Text.superRefine((text, ctx) => {
    if (billableCharacters(text) > max)
      ctx.addIssue({ code: 'too_big', origin: 'string', maximum: max, inclusive: true, input: text, message: `at most ${max} characters` });
  });
}

export const TtsV1RequestSchema = z
  .looseObject({
    text: Text.describe('Bambara text to speak'),
    speaker: z.int().min(0).max(4).nullable().optional().describe('Speaker 0–4 of djelia-tts-v1; absent or null: 1'),
  })
  .meta({ id: 'NativeTtsRequest' });

export const TtsV2RequestSchema = z
  .looseObject({
    text: boundedText(V2_MAX_TEXT).describe(`Bambara text to speak, at most ${V2_MAX_TEXT} characters`),
    description: z.string().max(MAX_DESCRIPTION).describe('How to speak; naming Moussa, Sekou or Seydou picks that voice (Moussa otherwise)'),
    format: z.enum(NATIVE_TTS_FORMATS).nullable().optional().describe('mp3 (default), wav, wav_8k or ulaw_8k'),
  })
  .meta({ id: 'NativeTtsV2Request' });

export const TtsV2StreamRequestSchema = TtsV2RequestSchema.extend({
  chunk_size: z.number().min(0.1).max(2).nullable().optional().describe('Seconds of audio per streamed chunk, 0.1–2.0 (default 1.0)'),
}).meta({ id: 'NativeTtsV2StreamRequest' });
