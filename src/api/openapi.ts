/**
 * Builds the OpenAPI 3.1 document from the route table the server mounts: the same route definitions,
 * the same surface prefixes and the same zod schemas that validate the traffic. Every operation lists
 * each media type it answers with (JSON, text, audio, Server-Sent Events with their event schemas) and
 * the error envelope of every error status it can answer, including those its auth, billing, request
 * body and the transport imply.
 */
import type { ZodType } from 'zod';
import { ErrorEnvelopeSchema, NativeErrorSchema, RetiredEndpointSchema } from './schemas/common.js';
import { errorDescription } from './schemas/responses.js';
import { SchemaComponents } from './openapi-components.js';
import { MEDIA_TYPES } from './media-types.js';
import { rateLimitHeaderComponents, rateLimitResponseHeaders } from './openapi-rate-limits.js';
import { SURFACE_PREFIXES, type OpenApiResponse, type RouteDef, type Surface } from './types.js';

type JsonObject = Record<string, unknown>;

/** The primary surface's prefixes are the document's servers; other surfaces override them per path. */
const DOCUMENT_SURFACE: Surface = 'compat';
/**
 * Surfaces whose paths the document keys with their prefix, under the root server: the admin API's paths
 * (`/models`) repeat the primary surface's, and the document can key a path only once.
 */
const ROOTED_SURFACES: ReadonlySet<Surface> = new Set(['admin']);
/** What an admin route answers whatever it does: no or an incorrect admin key (401), an API key (403). */
const ADMIN_AUTH_ERRORS = [401, 403];

/**
 * Statuses every operation can answer whatever it does: 500 for an internal failure, 503 while the server
 * shuts down (the transport refuses new requests before routing them).
 */
const TRANSPORT_ERRORS = [500, 503];
/** What reading a request body can fail with (RequestBody.json() / multipart()): malformed, too large, wrong type. */
const BODY_ERRORS = [400, 413, 415];
/**
 * The native surface answers as the FastAPI service its clients were written for: a body of another type is
 * read as an empty form or as invalid JSON, a 422 with `detail` entries, never a 415.
 */
const NATIVE_BODY_ERRORS = [400, 413];

export function buildOpenApiDocument(routes: RouteDef[], info: { title: string; version: string; vendor: string }): JsonObject {
  const components = new SchemaComponents();
  const paths: Record<string, JsonObject> = {};
  const pathSurface = new Map<string, Surface>();
  for (const route of routes) {
    if (!route.openapi) continue;
    const rooted = ROOTED_SURFACES.has(route.surface);
    const path = (rooted ? SURFACE_PREFIXES[route.surface][0] : '') + route.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const known = pathSurface.get(path);
    // The document keys paths without their prefix, so two surfaces must not share one.
    if (known !== undefined && known !== route.surface) throw new Error(`OpenAPI path ${path} is served by both the ${known} and ${route.surface} surfaces`);
    pathSurface.set(path, route.surface);
    const item = (paths[path] ??= route.surface === DOCUMENT_SURFACE ? {} : { servers: rooted ? [{ url: '/' }] : serversOf(route.surface) });
    item[route.method.toLowerCase()] = operation(route, components);
  }

  return {
    openapi: '3.1.0',
    info: {
      title: info.title,
      version: info.version,
      description:
        `Speech and translation for Bambara, French and English. The primary surface answers identically under ` +
        `${SURFACE_PREFIXES[DOCUMENT_SURFACE].join(' and ')} (the servers below); the operational endpoints are at the root, and the ` +
        `admin API (tag Admin) under ${SURFACE_PREFIXES.admin.join('')}, with admin keys only. ` +
        `Extension objects are sent under the key \`${info.vendor}\`. Every failure is the error envelope, and every ` +
        `response carries \`x-request-id\`.`,
    },
    servers: serversOf(DOCUMENT_SURFACE),
    paths,
    components: {
      schemas: components.all(),
      headers: rateLimitHeaderComponents(),
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key (a UUID)' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        adminKey: { type: 'http', scheme: 'bearer', description: 'Admin key (kadm_…), for the admin API only; created with `npm run keys -- admin create`' },
      },
    },
  };
}

function serversOf(surface: Surface): JsonObject[] {
  return SURFACE_PREFIXES[surface].map((prefix) => ({ url: prefix || '/' }));
}

function operation(route: RouteDef, components: SchemaComponents): JsonObject {
  const op = route.openapi!;
  const params = [...route.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    ...(op.tags ? { tags: op.tags } : {}),
    ...(params.length ? { parameters: params } : {}),
    ...(op.request ? { requestBody: { required: true, content: { [op.request.contentType]: { schema: components.input(op.request.schema) } } } } : {}),
    ...(op.deprecated ? { deprecated: true } : {}),
    responses: responses(route, components),
    security: securityOf(route),
  };
}

function securityOf(route: RouteDef): JsonObject[] {
  // Admin routes authenticate inside their handlers (`auth: false` to the API-key gate), with admin keys.
  if (route.surface === 'admin') return [{ adminKey: [] }];
  if (!route.auth) return [];
  // The native surface takes x-api-key only (SPEC §5.3).
  return route.surface === 'native' ? [{ apiKeyHeader: [] }] : [{ bearerAuth: [] }, { apiKeyHeader: [] }];
}

/** The operation's own responses, then the error envelope under every error status it can answer. */
function responses(route: RouteDef, components: SchemaComponents): JsonObject {
  const op = route.openapi!;
  const all = new Map<number, OpenApiResponse>(Object.entries(op.responses).map(([status, r]) => [Number(status), { ...r, content: [...(r.content ?? [])] }]));
  const errorStatuses = new Set([
    ...(route.auth ? [401, 429] : []),
    ...(route.billable ? [402] : []),
    ...(op.request ? (route.surface === 'native' ? NATIVE_BODY_ERRORS : BODY_ERRORS) : []),
    ...(route.surface === 'admin' ? ADMIN_AUTH_ERRORS : []),
    ...TRANSPORT_ERRORS,
    ...(op.errors ?? []),
  ]);
  // A native route answers its errors as `{detail}` (its 410 after retirement is the envelope plus `detail`).
  if (route.surface === 'native') errorStatuses.add(410);
  for (const status of errorStatuses) {
    const schema = route.surface !== 'native' ? ErrorEnvelopeSchema : status === 410 ? RetiredEndpointSchema : NativeErrorSchema;
    const envelope = { contentType: MEDIA_TYPES.json, schema };
    const own = all.get(status);
    // A status the operation answers itself (a readiness report's 503) can also come as an envelope.
    if (own) all.set(status, { description: `${own.description}; or the error envelope: ${errorDescription(status)}`, content: [...own.content!, envelope] });
    else all.set(status, { description: errorDescription(status), content: [envelope] });
  }

  const out: JsonObject = {};
  for (const status of [...all.keys()].sort((a, b) => a - b)) {
    const response = all.get(status)!;
    const content: JsonObject = {};
    for (const type of new Set(response.content!.map((c) => c.contentType))) {
      const variants = response.content!.filter((c) => c.contentType === type);
      const schemas = variants.filter((c): c is typeof c & { schema: ZodType } => c.schema !== undefined).map((c) => components.output(c.schema));
      const formats = variants.flatMap((c) => c.responseFormats ?? []);
      content[type] = {
        ...(schemas.length === 1 ? { schema: schemas[0] } : schemas.length > 1 ? { schema: { anyOf: schemas } } : {}),
        ...(formats.length ? { 'x-response-formats': formats } : {}),
      };
    }
    out[String(status)] = {
      description: response.description,
      // Every answer to an authenticated request carries the rate-limit headers (README "Rate limits").
      ...(route.auth ? { headers: rateLimitResponseHeaders(status) } : {}),
      ...(Object.keys(content).length ? { content } : {}),
    };
  }
  return out;
}
