/**
 * zod schemas of POST /chat/completions used for text translation (SPEC §2.4, §2.4a, §2.5, §4.6). Every
 * field of §4.6's ignore list is accepted whatever its value; unknown fields are ignored too.
 */
import { z } from 'zod';
import { TRANSLATION_MODEL_ID } from '../../engines/model-ids.js';

export const LANGUAGES = ['bam_Latn', 'fra_Latn', 'eng_Latn'] as const;

const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });

export const ChatMessageSchema = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(ContentPart), z.null()]).optional(),
  name: z.unknown().optional(),
});

export const TranslationOptionsSchema = z
  .object({
    source_language: z.enum(LANGUAGES),
    target_language: z.enum(LANGUAGES),
  })
  .refine((o) => o.source_language !== o.target_language, { message: 'source_language and target_language must differ', path: ['target_language'] });

/** The request; `vendor` is the configured name of the extension object (`djelia`). */
export function chatRequestSchema(vendor: string) {
  return z.looseObject({
    model: z.string().min(1).default(TRANSLATION_MODEL_ID),
    messages: z.array(ChatMessageSchema).min(1),
    stream: z.boolean().nullable().optional(),
    [vendor]: TranslationOptionsSchema,
  });
}

/** Counts in the unit the model is billed in (SPEC §2.4): characters, or tokens for the token-billed model. */
export const ChatUsageSchema = z
  .object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() })
  .meta({ id: 'ChatCompletionUsage' });

export const ChatCompletionSchema = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({ role: z.literal('assistant'), content: z.string().nullable() }),
        finish_reason: z.literal('stop'),
        logprobs: z.null(),
      }),
    ),
    usage: ChatUsageSchema,
  })
  .meta({ id: 'ChatCompletion' });

/**
 * One event of a streamed completion (PROTOCOLS §7): role, the whole translation as one delta, then `stop`;
 * with `stream_options.include_usage`, every chunk has `usage: null` but a last one with no choices and the usage.
 */
export const ChatCompletionChunkSchema = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        delta: z.object({ role: z.literal('assistant').optional(), content: z.string().optional() }),
        finish_reason: z.literal('stop').nullable(),
        logprobs: z.null(),
      }),
    ),
    usage: ChatUsageSchema.nullable().optional(),
  })
  .meta({ id: 'ChatCompletionChunk' });
