/**
 * Builds the OpenAPI 3.1 document from the route table: every operation's request and response schemas
 * are the same zod schemas that validate the traffic, converted with zod's own JSON Schema output
 * (draft 2020-12, which OpenAPI 3.1 uses). Schemas with a `meta({id})` become shared components.
 */
import { z, type ZodType } from 'zod';
import { SURFACE_PREFIXES, type RouteDef } from './types.js';

type JsonObject = Record<string, unknown>;

export function buildOpenApiDocument(routes: RouteDef[], info: { title: string; version: string; vendor: string }): JsonObject {
  const components: Record<string, unknown> = {};
  const toSchema = (schema: ZodType): unknown => {
    const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output', unrepresentable: 'any' }) as JsonObject;
    const { $schema: _ignored, ...rest } = json;
    return hoistDefs(rest, components);
  };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    if (!route.openapi || route.surface !== 'compat') continue;
    const prefix = SURFACE_PREFIXES.compat[0]!;
    const path = prefix + route.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const params = [...route.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const op = route.openapi;
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(op.responses)) {
      responses[status] = {
        description: response.description,
        ...(response.schema || response.contentType
          ? { content: { [response.contentType ?? 'application/json']: response.schema ? { schema: toSchema(response.schema) } : {} } }
          : {}),
      };
    }
    (paths[path] ??= {})[route.method.toLowerCase()] = {
      operationId: op.operationId,
      summary: op.summary,
      tags: op.tags,
      ...(params.length ? { parameters: params } : {}),
      ...(op.request ? { requestBody: { required: true, content: { [op.request.contentType]: { schema: toSchema(op.request.schema) } } } } : {}),
      responses,
      ...(route.auth ? { security: [{ bearerAuth: [] }, { apiKeyHeader: [] }] } : { security: [] }),
    };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: info.title,
      version: info.version,
      description: `Speech and translation for Bambara, French and English. The same operations are served under /openai/v1. Extension objects are sent under the key \`${info.vendor}\`.`,
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key (a UUID)' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key' },
      },
    },
  };
}

/** Moves `$defs` into components.schemas and rewrites their references to point there. */
function hoistDefs(schema: JsonObject, components: Record<string, unknown>): unknown {
  const defs = (schema.$defs ?? {}) as Record<string, unknown>;
  delete schema.$defs;
  for (const [name, def] of Object.entries(defs)) components[name] = rewriteRefs(def);
  const id = schema.id as string | undefined;
  const body = rewriteRefs(schema) as JsonObject;
  if (id) {
    delete body.id;
    components[id] = body;
    return { $ref: `#/components/schemas/${id}` };
  }
  return body;
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value && typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = k === '$ref' && typeof v === 'string' ? v.replace('#/$defs/', '#/components/schemas/') : rewriteRefs(v);
    }
    return out;
  }
  return value;
}
