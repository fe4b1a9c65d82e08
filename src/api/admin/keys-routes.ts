/**
 * API keys over the admin API: create one for an account (the key is in that response and nowhere else,
 * ever) and revoke one. A revocation drops this process's key cache, so the key's very next request is
 * refused, and ends the key's open sessions here at once (the store is wrapped by withRevocationEnding; other
 * processes end theirs at their next sweep). Both are audited, by key id.
 */
import { generateApiKey, hashApiKey } from '../../auth/api-keys.js';
import { ApiError } from '../errors.js';
import { jsonContent } from '../schemas/responses.js';
import { CreatedApiKeySchema, CreateKeyRequestSchema, RevokedApiKeySchema } from '../schemas/admin.js';
import type { RouteDef } from '../types.js';
import { parseRequest } from '../validation.js';
import { adminRoute, audit, type AdminDeps } from './admin-route.js';
import { keyView, requireAccount } from './views.js';

/** The label of a key created without one, as `npm run keys -- create` names it. */
const DEFAULT_LABEL = 'default';

export function keyRoutes(deps: AdminDeps): RouteDef[] {
  const { store } = deps;
  return [
    adminRoute(deps, {
      method: 'POST',
      path: '/accounts/:id/keys',
      openapi: {
        operationId: 'adminCreateApiKey',
        summary: 'Create an API key for an account; the key is shown in this response only',
        request: { contentType: 'application/json', schema: CreateKeyRequestSchema },
        responses: { 201: { description: 'The key record, and the key itself (once)', content: [jsonContent(CreatedApiKeySchema)] } },
        errors: [404],
      },
      handler: async (req, admin) => {
        const body = parseRequest(CreateKeyRequestSchema, await req.body.json());
        const account = await requireAccount(store, req.params.id!);
        const apiKey = generateApiKey();
        const key = await store.createKey(account.id, hashApiKey(apiKey), body.label ?? DEFAULT_LABEL);
        await audit(deps, admin, req, 'key.create', key.id, { account_id: account.id, label: key.label });
        return { kind: 'json', status: 201, body: { key: keyView(key), api_key: apiKey } };
      },
    }),
    adminRoute(deps, {
      method: 'DELETE',
      path: '/keys/:id',
      openapi: {
        operationId: 'adminRevokeApiKey',
        summary: 'Revoke an API key: its requests are refused (401) from the next one on, and its open sessions end (close 1008 key_revoked)',
        responses: { 200: { description: 'The key, with revoked_at set', content: [jsonContent(RevokedApiKeySchema)] } },
        errors: [404],
      },
      handler: async (req, admin) => {
        const id = req.params.id!;
        // revokeKey is false for an unknown id and for one already revoked (also by a concurrent call): both 404.
        if (!(await store.revokeKey(id))) throw new ApiError('key_not_found', 'No active API key with this id (unknown, or already revoked).', { param: 'id' });
        const key = (await store.getKey(id))!;
        await audit(deps, admin, req, 'key.revoke', key.id, { account_id: key.accountId });
        return { kind: 'json', body: { key: keyView(key) } };
      },
    }),
  ];
}
