/**
 * The admin API (/admin/v1, README "Admin API"): what `npm run keys` does, for the browser console,
 * authenticated with admin keys (never API keys) and audited. The routes are in files by what they touch:
 * accounts, API keys, rate-limit overrides, webhooks, the read-only reports and an account's records.
 */
import type { RouteDef } from '../types.js';
import { accountRoutes } from './accounts-routes.js';
import type { AdminDeps } from './admin-route.js';
import { keyRoutes } from './keys-routes.js';
import { limitRoutes } from './limits-routes.js';
import { recordRoutes } from './records-routes.js';
import { reportRoutes } from './reports-routes.js';
import { webhookRoutes } from './webhook-routes.js';

export type { AdminDeps } from './admin-route.js';

export function adminRoutes(deps: AdminDeps): RouteDef[] {
  return [...reportRoutes(deps), ...accountRoutes(deps), ...keyRoutes(deps), ...limitRoutes(deps), ...webhookRoutes(deps), ...recordRoutes(deps)];
}
