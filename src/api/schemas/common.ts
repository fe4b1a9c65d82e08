/** zod schemas shared by every endpoint: the error envelope and the model objects (SPEC §2.1, §2.2). */
import { z } from 'zod';

export const ErrorEnvelopeSchema = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string(),
      param: z.string().nullable(),
      code: z.string().nullable(),
    }),
  })
  .meta({ id: 'OpenAIError' });

/** Native surface errors (PROTOCOLS §4): a `detail` array of validation problems, or a `detail` message. */
export const NativeErrorSchema = z
  .object({
    detail: z.union([
      z.string(),
      z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])), msg: z.string(), type: z.string(), input: z.unknown().optional() })),
    ]),
  })
  .meta({ id: 'NativeError' });

/** A retired native route's 410: the envelope (code `endpoint_retired`) with the message also as `detail`. */
export const RetiredEndpointSchema = ErrorEnvelopeSchema.extend({ detail: z.string() }).meta({ id: 'RetiredEndpointError' });

export const ModelObjectSchema = z
  .object({
    id: z.string(),
    object: z.literal('model').default('model'),
    created: z.number().int().default(1735689600),
    owned_by: z.string().default('djelia'),
    /** Extension: the licence of the weights, for models installed from a pack (npm run models:pull -- --pack). */
    license: z
      .object({
        id: z.string().meta({ description: 'Licence id as the Hugging Face hub writes it, e.g. cc-by-nc-4.0' }),
        name: z.string(),
        url: z.string(),
        commercial_use: z.boolean().meta({ description: 'false: the weights may not be served for commercial use' }),
        source: z.string().meta({ description: 'Where the weights come from (repository, revision, upstream model)' }),
        notice: z.string(),
      })
      .optional(),
  })
  .meta({ id: 'ModelObject' });

export const ModelListSchema = z
  .object({
    object: z.literal('list').default('list'),
    data: z.array(ModelObjectSchema),
  })
  .meta({ id: 'ModelList' });
