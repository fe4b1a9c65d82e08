/**
 * zod schemas of the audio endpoints (SPEC §4.3, §4.4, §2.3; PROTOCOLS §6–§7). Multipart fields arrive as
 * strings ("0.2", "true"), so scalars are coerced; fields the spec says are accepted and ignored are
 * declared, so they never cause a rejection.
 */
import { z } from 'zod';
import { TRANSCRIPTION_MODEL_ID } from '../../engines/model-ids.js';

/** "true"/"false"/"1"/"0" from a form, or a real boolean; empty means not given. */
const formBoolean = z.preprocess((v) => (v === '' || v === 'null' ? null : v), z.union([z.boolean(), z.stringbool()]).nullable());
const formNumber = z.preprocess((v) => (v === '' || v === 'null' ? null : v), z.coerce.number().nullable());
const optionalString = z.union([z.string(), z.null()]).optional();
// The bounds are restated as metadata: a document of the form's input side would lose them behind the coercion.
const formTemperature = formNumber.pipe(z.number().min(0).max(1).nullable()).meta({ minimum: 0, maximum: 1 }).optional();

export const TRANSCRIPTION_FORMATS = ['json', 'text', 'verbose_json', 'srt', 'vtt'] as const;

/**
 * `response_format` of a transcript: an unknown name is 400 invalid_value whose message names it and the
 * formats there are, worded as the speech route words its own (`ogg is not a … format; use one of …`).
 */
const transcriptFormat = (use: string) =>
  z.enum(TRANSCRIPTION_FORMATS, { error: (issue) => `${JSON.stringify(issue.input)} is not a transcript format; ${use}.` }).default('json');

export const TranscriptionFormSchema = z.object({
  model: z.string().min(1).default(TRANSCRIPTION_MODEL_ID),
  response_format: transcriptFormat(`use one of ${TRANSCRIPTION_FORMATS.join(', ')}`),
  stream: formBoolean.optional(),
  temperature: formTemperature,
  // Accepted and ignored (Bambara only; no prompting).
  language: optionalString,
  prompt: optionalString,
  // `word` adds the timed words to verbose_json; segment times are always there; other values are ignored.
  timestamp_granularities: z.union([z.array(z.string()), z.string(), z.null()]).optional(),
});

export const TranslationFormSchema = z.object({
  model: z.string().min(1).default(TRANSCRIPTION_MODEL_ID),
  language: z
    .preprocess((v) => (v === '' || v === 'null' ? null : v), z.enum(['eng_Latn', 'fra_Latn']).nullable())
    .meta({ description: 'The language to translate into; eng_Latn when absent or null' })
    .optional(),
  response_format: transcriptFormat('translations answer json or text'),
  temperature: formTemperature,
  prompt: optionalString,
});

export const DurationUsageSchema = z.object({ type: z.literal('duration'), seconds: z.number() });

export const TranscriptionResponseSchema = z.object({ text: z.string(), usage: DurationUsageSchema.optional() }).meta({ id: 'TranscriptionResponse' });

export const TranscriptionSegmentSchema = z
  .object({
    id: z.number().int(),
    seek: z.literal(0),
    start: z.number(),
    end: z.number(),
    text: z.string(),
    tokens: z.array(z.number()).max(0),
    temperature: z.literal(0),
    avg_logprob: z.literal(0),
    compression_ratio: z.literal(0),
    no_speech_prob: z.literal(0),
  })
  .meta({ id: 'TranscriptionSegment' });

/** A timed word of verbose_json (asked with `timestamp_granularities[]=word`), in OpenAI's shape. */
export const TranscriptionWordSchema = z.object({ word: z.string(), start: z.number(), end: z.number() }).meta({ id: 'TranscriptionWord' });

export const VerboseTranscriptionSchema = z
  .object({
    task: z.enum(['transcribe', 'translate']),
    language: z.string(),
    duration: z.number(),
    text: z.string(),
    segments: z.array(TranscriptionSegmentSchema),
    /** With the `word` granularity, from models that time words (CTC); each inside its segment, in order. */
    words: z.array(TranscriptionWordSchema).optional(),
    usage: DurationUsageSchema.optional(),
  })
  .meta({ id: 'TranscriptionVerbose' });

/** Events of a streamed transcription (PROTOCOLS §7), in the order sent: segment and delta per segment, then done. */
export const TranscriptTextSegmentEventSchema = z
  .object({ type: z.literal('transcript.text.segment'), id: z.string(), start: z.number(), end: z.number(), text: z.string(), speaker: z.string() })
  .meta({ id: 'TranscriptTextSegmentEvent' });
export const TranscriptTextDeltaEventSchema = z
  .object({ type: z.literal('transcript.text.delta'), delta: z.string() })
  .meta({ id: 'TranscriptTextDeltaEvent' });
export const TranscriptTextDoneEventSchema = z
  .object({ type: z.literal('transcript.text.done'), text: z.string(), usage: DurationUsageSchema.optional() })
  .meta({ id: 'TranscriptTextDoneEvent' });

/** The multipart request, for the OpenAPI document (the file part is binary). */
export const TranscriptionRequestDoc = TranscriptionFormSchema.extend({ file: z.string().meta({ format: 'binary' }) }).meta({ id: 'TranscriptionRequest' });
export const TranslationRequestDoc = TranslationFormSchema.extend({ file: z.string().meta({ format: 'binary' }) }).meta({ id: 'SpeechTranslationRequest' });
