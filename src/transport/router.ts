/**
 * Path routing with `:param` segments. Knows the difference between a path nobody serves (404
 * unknown_endpoint) and a served path asked with the wrong method (405 method_not_allowed, with Allow).
 */
import type { HttpMethod, HttpRoute } from '../api/types.js';

interface CompiledRoute {
  route: HttpRoute;
  segments: string[];
}

export type RouteMatch =
  { kind: 'found'; route: HttpRoute; params: Record<string, string> } | { kind: 'wrong_method'; allowed: HttpMethod[] } | { kind: 'not_found' };

function splitPath(path: string): string[] {
  // Trailing slashes are forgiven: `/models/` is `/models`.
  return path.split('/').filter((s, i, all) => s !== '' || (i > 0 && i < all.length - 1));
}

export class Router {
  private readonly routes: CompiledRoute[] = [];
  /**
   * `METHOD /exact/path` → route, for routes without parameters that no earlier route also matches: the
   * common request then costs one map lookup instead of splitting its path and scanning every pattern.
   */
  private readonly exact = new Map<string, HttpRoute>();

  constructor(routes: Iterable<HttpRoute> = []) {
    for (const route of routes) this.add(route);
  }

  add(route: HttpRoute): void {
    const duplicate = this.routes.find((r) => r.route.method === route.method && r.route.pattern === route.pattern);
    if (duplicate) throw new Error(`Route ${route.method} ${route.pattern} is registered twice`);
    const segments = splitPath(route.pattern);
    const shadowed = this.routes.some((r) => r.route.method === route.method && matchSegments(r.segments, segments));
    if (!route.pattern.includes(':') && !shadowed) this.exact.set(`${route.method} ${route.pattern}`, route);
    this.routes.push({ route, segments });
  }

  list(): HttpRoute[] {
    return this.routes.map((r) => r.route);
  }

  match(method: string, path: string): RouteMatch {
    const exact = this.exact.get(`${method === 'HEAD' ? 'GET' : method} ${path}`);
    if (exact) return { kind: 'found', route: exact, params: {} };
    const parts = splitPath(path);
    const allowed: HttpMethod[] = [];
    for (const compiled of this.routes) {
      const params = matchSegments(compiled.segments, parts);
      if (!params) continue;
      if (compiled.route.method === method || (method === 'HEAD' && compiled.route.method === 'GET')) {
        return { kind: 'found', route: compiled.route, params };
      }
      allowed.push(compiled.route.method);
    }
    return allowed.length ? { kind: 'wrong_method', allowed } : { kind: 'not_found' };
  }
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | undefined {
  if (pattern.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i]!;
    const got = parts[i]!;
    if (want.startsWith(':')) {
      if (got === '') return undefined;
      try {
        params[want.slice(1)] = decodeURIComponent(got);
      } catch {
        return undefined; // malformed percent-encoding cannot name anything we serve
      }
    } else if (want !== got) {
      return undefined;
    }
  }
  return params;
}
