/**
 * The retirement calendar on the wire (SPEC §9, PROTOCOLS §6): while the native routes and the legacy model
 * ids are still served, every answer for them carries `Deprecation`, `Sunset` and a successor `Link`; from the
 * retirement date on, a native route answers 410 `endpoint_retired` naming its successor. The date and the
 * clock come from the model catalog, so one injected clock moves both the routes and the model ids.
 */
import { ApiError } from './errors.js';
import { MODEL_CREATED, type CatalogModel, type ModelCatalog } from './model-catalog.js';
import { PRIMARY_PREFIX, type NativeRouteSpec } from './native/native-paths.js';
import { SURFACE_PREFIXES, type ApiRequest } from './types.js';

/**
 * RFC 9745 `Deprecation`: when the deprecation took effect, as a structured-field date. The native surface and
 * the legacy ids became deprecated when the primary surface's models appeared (their `created`, SPEC §2.1).
 */
export const DEPRECATION_VALUE = `@${MODEL_CREATED}`;

/** `Deprecation`, `Sunset` (RFC 8594, an HTTP date) and `Link` to the successor, for a deprecated route or model. */
export function deprecationHeaders(catalog: ModelCatalog, successor: string): Record<string, string> {
  return {
    deprecation: DEPRECATION_VALUE,
    sunset: catalog.retiresAt().toUTCString(),
    link: `<${successor}>; rel="successor-version"`,
  };
}

/**
 * The primary prefix a request came in on: a client of `/openai/v1` is pointed to `/openai/v1/…`, one of
 * `/compat/v1` (or of no primary prefix at all: the native routes, whose successor surface is `/compat/v1`)
 * to `/compat/v1/…`. A successor under the other prefix works too, but would send an SDK configured with one
 * base URL to a path outside it.
 */
export function primaryPrefixOf(path: string | undefined): string {
  return SURFACE_PREFIXES.compat.find((prefix) => path?.startsWith(`${prefix}/`)) ?? PRIMARY_PREFIX;
}

/** The primary route a legacy model's replacement is described at, under the prefix the request used. */
export function modelSuccessor(replacementId: string, requestPath?: string): string {
  return `${primaryPrefixOf(requestPath)}/models/${replacementId}`;
}

/** Marks a response served for a legacy model id as deprecated (a no-op for current models and aliases). */
export function markLegacyModel(catalog: ModelCatalog, model: CatalogModel, req: Pick<ApiRequest, 'responseHeaders' | 'path'>): void {
  if (!model.legacy) return;
  Object.assign(req.responseHeaders, deprecationHeaders(catalog, modelSuccessor(catalog.replacementOf(model.id) ?? model.id, req.path)));
}

/** The 410 a native route answers from the retirement date on, whatever the method and whoever asks. */
export function retiredError(catalog: ModelCatalog, route: NativeRouteSpec, asked: string): ApiError {
  return new ApiError('endpoint_retired', `${asked} was retired on ${catalog.retirementDate}. Use ${route.migration}.`, {
    headers: { link: `<${route.successor}>; rel="successor-version"`, sunset: catalog.retiresAt().toUTCString() },
  });
}
