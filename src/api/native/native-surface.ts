/**
 * Puts the native routes (SPEC §4.7) under the retirement calendar. Each served route gets a gate that runs
 * before auth: until the retirement date it adds `Deprecation`, `Sunset` and the successor `Link` to whatever
 * the request is answered with (errors included); from that date on it answers 410 `endpoint_retired`. The
 * methods a native path does not serve get a route of their own with the same gate, so that after the date
 * every method of a retired path answers 410 (before it, 405 with `Allow`) — never a 404.
 */
import { ApiError } from '../errors.js';
import type { ModelCatalog } from '../model-catalog.js';
import { deprecationHeaders, retiredError } from '../deprecation.js';
import type { ApiRequest, HttpMethod, RouteDef } from '../types.js';
import type { Metrics } from '../../observability/metrics.js';
import { nativeRequestsCounter } from '../../observability/deprecation-metrics.js';
import { NATIVE_ROUTES, nativeRouteSpec, type NativeRouteSpec } from './native-paths.js';

const ALL_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export function nativeSurface(served: RouteDef[], catalog: ModelCatalog, metrics: Metrics): RouteDef[] {
  const counter = nativeRequestsCounter(metrics);
  const retirementGate = (spec: NativeRouteSpec) => gateFor(catalog, spec, (outcome) => counter.inc({ route: spec.path, outcome }));
  const gated = served.map((def) => {
    const spec = nativeRouteSpec(def.method, def.path);
    if (def.surface !== 'native' || !spec) throw new Error(`${def.method} ${def.path} is not a native route (src/api/native/native-paths.ts lists them)`);
    return { ...def, gate: retirementGate(spec), ...(def.openapi ? { openapi: { ...def.openapi, deprecated: true } } : {}) };
  });
  return [...gated, ...otherMethodRoutes(retirementGate)];
}

function gateFor(catalog: ModelCatalog, spec: NativeRouteSpec, count: (outcome: 'served' | 'retired') => void): (req: ApiRequest) => void {
  return (req) => {
    if (catalog.legacyRetired()) {
      count('retired');
      throw retiredError(catalog, spec, `${req.method} ${req.path}`);
    }
    count('served');
    Object.assign(req.responseHeaders, deprecationHeaders(catalog, spec.successor));
  };
}

/** For each native path, a route per method it does not serve: 405 with Allow while served, 410 after. */
function otherMethodRoutes(retirementGate: (spec: NativeRouteSpec) => (req: ApiRequest) => void): RouteDef[] {
  const paths = [...new Set(NATIVE_ROUTES.map((route) => route.path))];
  return paths.flatMap((path) => {
    const servedHere = NATIVE_ROUTES.filter((route) => route.path === path);
    const allowed = servedHere.map((route) => route.method);
    const spec = servedHere[0]!;
    return ALL_METHODS.filter((method) => !allowed.includes(method)).map((method): RouteDef => ({
      method,
      path,
      surface: 'native',
      auth: false,
      gate: retirementGate(spec),
      openapi: {
        operationId: `${method.toLowerCase()}${operationName(path)}NotServed`,
        summary: `Not served: 405 until the retirement date, 410 from it on (the path serves ${allowed.join(', ')})`,
        tags: ['Native (deprecated)'],
        deprecated: true,
        responses: {},
        errors: [405, 410],
      },
      handler: async (req) => {
        throw new ApiError('method_not_allowed', `Method ${req.method} is not allowed on ${req.path}; use ${allowed.join(', ')}.`, {
          headers: { allow: allowed.join(', ') },
        });
      },
    }));
  });
}

/** `/v2/models/tts/stream` → `V2ModelsTtsStream`, for operation ids. */
function operationName(path: string): string {
  return path
    .split(/[/-]/)
    .filter(Boolean)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');
}
