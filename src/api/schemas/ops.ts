/** zod schemas of the operational endpoints (liveness, readiness) and of the OpenAPI document itself. */
import { z } from 'zod';

export const HealthSchema = z
  .object({
    status: z.literal('ok'),
    /** Which process answered: with several workers (KUMA_WORKERS) or nodes, tells them apart. */
    pid: z.number().int(),
    /** The cluster's id of this worker process (new for every worker started); absent for a single process. */
    worker: z.number().int().optional(),
  })
  .meta({ id: 'Health' });

export const ReadinessSchema = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    checks: z.array(z.object({ name: z.string(), ready: z.boolean(), detail: z.string().optional() })),
  })
  .meta({ id: 'Readiness' });

/** Only the document's frame: its body is described by the OpenAPI 3.1 specification, not here. */
export const OpenApiDocumentSchema = z
  .looseObject({ openapi: z.string(), info: z.looseObject({ title: z.string(), version: z.string() }), paths: z.record(z.string(), z.unknown()) })
  .meta({ id: 'OpenApiDocument' });
