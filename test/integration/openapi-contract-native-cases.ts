/**
 * The native surface's exchanges for the OpenAPI contract test. Native paths are absolute (their prefixes
 * are '' and '/api'), and each case runs under both. The main server's clock is before the retirement date
 * (routes served, deprecated), the bare server's is the real one (past the default date: every native route
 * answers 410).
 */
import { NATIVE_ROUTES } from '../../src/api/native/native-paths.js';
import type { ContractCase } from './openapi-contract-cases.js';

const OTHER_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Both native prefixes of one case. */
export function underNativePrefixes(c: ContractCase): ContractCase[] {
  return ['', '/api'].map((prefix) => ({ ...c, path: prefix + c.path, absolute: true, name: `${c.name} (${prefix || 'no prefix'})` }));
}

/** A method a native path does not serve: 405 while served, 410 once retired. */
export function nativeMethodGuardCases(): ContractCase[] {
  return NATIVE_ROUTES.flatMap((route) =>
    OTHER_METHODS.filter((method) => method !== route.method).flatMap((method) => {
      const operation = `${method.toLowerCase()}${route.path.split(/[/-]/).filter(Boolean).map((p) => p[0]!.toUpperCase() + p.slice(1)).join('')}NotServed`;
      return [
        ...underNativePrefixes({ name: `${method} ${route.path} while served`, operation, method, path: route.path, status: 405 }),
        ...underNativePrefixes({ name: `${method} ${route.path} once retired`, operation, method, path: route.path, status: 410, server: 'bare' }),
      ];
    }),
  );
}
