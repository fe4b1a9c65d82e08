/**
 * The admin API (/admin/v1, README "Admin API"): account and key management for the browser console,
 * authenticated with admin keys (never API keys) and audited. The routes are in three files by what they
 * touch: accounts, API keys, and the read-only reports.
 */
import type { RouteDef } from '../types.js';
import { accountRoutes } from './accounts-routes.js';
import type { AdminDeps } from './admin-route.js';
import { keyRoutes } from './keys-routes.js';
import { reportRoutes } from './reports-routes.js';

export type { AdminDeps } from './admin-route.js';

export function adminRoutes(deps: AdminDeps): RouteDef[] {
  return [...reportRoutes(deps), ...accountRoutes(deps), ...keyRoutes(deps)];
}
