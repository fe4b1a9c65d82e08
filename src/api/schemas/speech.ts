/**
 * zod schemas of POST /audio/speech (SPEC §4.5, §2.5, §8): the request with the speech options of the
 * extension object and their bounds, and the SSE events. Format, voice and length rules depend on the
 * model and are applied by the handler (they have their own statuses and codes).
 */
import { z } from 'zod';
import { SPEECH_MODEL_ID } from '../../engines/model-ids.js';

export const SpeechOptionsSchema = z.object({
  description: z.string().max(500).nullable().optional(),
  chunk_size: z.number().min(0.1).max(2.0).default(1.0),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  repetition_penalty: z.number().gt(0).max(2).nullable().optional(),
  speaker: z.number().int().min(0).max(4).optional(),
});

/** `vendor` is the configured name of the extension object (`djelia`). */
export function speechRequestSchema(vendor: string) {
  return z.looseObject({
    model: z.string().min(1).default(SPEECH_MODEL_ID),
    input: z.string(),
    voice: z.string().optional(),
    response_format: z.string().default('mp3'),
    stream_format: z.enum(['audio', 'sse']).default('audio'),
    [vendor]: SpeechOptionsSchema.optional(),
    // Accepted and ignored (SPEC §4.5).
    speed: z.unknown().optional(),
    instructions: z.unknown().optional(),
  });
}

export const SpeechAudioDeltaSchema = z.object({ type: z.literal('speech.audio.delta'), audio: z.string() }).meta({ id: 'SpeechAudioDelta' });
export const SpeechAudioDoneSchema = z
  .object({
    type: z.literal('speech.audio.done'),
    usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int() }),
  })
  .meta({ id: 'SpeechAudioDone' });
