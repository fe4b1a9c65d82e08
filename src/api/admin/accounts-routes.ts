/**
 * /admin/v1/accounts: list, create, show (with its keys) and credit accounts — what `npm run keys -- list`,
 * `create` and `credit` do, over HTTP for the console. Creating and crediting are audited.
 */
import { jsonContent } from '../schemas/responses.js';
import { AdminAccountDetailSchema, AdminAccountListSchema, AdminAccountSchema, CreateAccountRequestSchema, CreditRequestSchema } from '../schemas/admin.js';
import type { RouteDef } from '../types.js';
import { parseRequest } from '../validation.js';
import { adminRoute, audit, type AdminDeps } from './admin-route.js';
import { accountView, countActive, keyView, requireAccount } from './views.js';

export function accountRoutes(deps: AdminDeps): RouteDef[] {
  const { store } = deps;
  return [
    adminRoute(deps, {
      method: 'GET',
      path: '/accounts',
      openapi: {
        operationId: 'adminListAccounts',
        summary: 'Every account with its balance, available balance and number of active keys',
        responses: { 200: { description: 'The accounts, oldest first', content: [jsonContent(AdminAccountListSchema)] } },
      },
      handler: async () => {
        // Two reads for the whole list rather than one per account.
        const [accounts, keys] = await Promise.all([store.listAccounts(), store.listKeys()]);
        const active = new Map<string, number>();
        for (const key of keys) if (key.revokedAt === null) active.set(key.accountId, (active.get(key.accountId) ?? 0) + 1);
        const data = await Promise.all(accounts.map((a) => accountView(deps, a, active.get(a.id) ?? 0)));
        return { kind: 'json', body: { object: 'list', data } };
      },
    }),
    adminRoute(deps, {
      method: 'POST',
      path: '/accounts',
      openapi: {
        operationId: 'adminCreateAccount',
        summary: 'Create an account, with a starting balance (no key: create one with POST /accounts/{id}/keys)',
        request: { contentType: 'application/json', schema: CreateAccountRequestSchema },
        responses: { 201: { description: 'The new account', content: [jsonContent(AdminAccountSchema)] } },
      },
      handler: async (req, admin) => {
        const body = parseRequest(CreateAccountRequestSchema, await req.body.json());
        const account = await store.createAccount(body.name, body.balance ?? 0);
        await audit(deps, admin, req, 'account.create', account.id, { name: account.name, balance_micros: account.balanceMicros });
        return { kind: 'json', status: 201, body: await accountView(deps, account, 0) };
      },
    }),
    adminRoute(deps, {
      method: 'GET',
      path: '/accounts/:id',
      openapi: {
        operationId: 'adminGetAccount',
        summary: 'One account with all its keys (revoked ones included; never the keys themselves)',
        responses: { 200: { description: 'The account and its keys', content: [jsonContent(AdminAccountDetailSchema)] } },
        errors: [404],
      },
      handler: async (req) => {
        const account = await requireAccount(store, req.params.id!);
        const keys = await store.listKeys(account.id);
        return { kind: 'json', body: { ...(await accountView(deps, account, countActive(keys))), keys: keys.map(keyView) } };
      },
    }),
    adminRoute(deps, {
      method: 'POST',
      path: '/accounts/:id/credit',
      openapi: {
        operationId: 'adminCreditAccount',
        summary: 'Add credit to an account (a negative amount removes it; the balance may then go below zero)',
        request: { contentType: 'application/json', schema: CreditRequestSchema },
        responses: { 200: { description: 'The account after the change', content: [jsonContent(AdminAccountSchema)] } },
        errors: [404],
      },
      handler: async (req, admin) => {
        const { amount } = parseRequest(CreditRequestSchema, await req.body.json());
        const before = await requireAccount(store, req.params.id!);
        // Through the cache-invalidating store: the cached copies of this account's keys go with it.
        const account = await store.credit(before.id, amount);
        await audit(deps, admin, req, 'account.credit', account.id, { amount_micros: amount, balance_micros: account.balanceMicros });
        return { kind: 'json', body: await accountView(deps, account, countActive(await store.listKeys(account.id))) };
      },
    }),
  ];
}
