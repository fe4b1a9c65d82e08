/**
 * The admin API from tests: an admin key made straight in a test server's store (as `npm run keys -- admin
 * create` does), and fetch helpers that present it and read the JSON answer.
 */
import { createAdminKey as storeAdminKey } from '../../src/auth/admin-keys.js';
import type { Store } from '../../src/store/store.js';

/** A new admin key in `store` (a test server's `server.store`): the key to present, and its id. */
export async function createAdminKey(store: Store, label = 'test admin key'): Promise<{ adminKey: string; id: string }> {
  const { adminKey, record } = await storeAdminKey(store, label);
  return { adminKey, id: record.id };
}

export interface AdminClient {
  /** A request under /admin/v1 with the admin key; `body` is sent as JSON. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; res: Response }>;
}

export function adminClient(baseUrl: string, adminKey: string): AdminClient {
  return {
    async call(method, path, body, headers = {}) {
      const res = await fetch(`${baseUrl}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined, res };
    },
  };
}
