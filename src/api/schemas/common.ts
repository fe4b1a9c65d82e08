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

export const ModelObjectSchema = z
  .object({
    id: z.string(),
    object: z.literal('model').default('model'),
    created: z.number().int().default(1735689600),
    owned_by: z.string().default('djelia'),
  })
  .meta({ id: 'ModelObject' });

export const ModelListSchema = z
  .object({
    object: z.literal('list').default('list'),
    data: z.array(ModelObjectSchema),
  })
  .meta({ id: 'ModelList' });
