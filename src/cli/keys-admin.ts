/**
 * `npm run keys -- admin …`: creates, lists and revokes the admin keys of the admin API (/admin/v1, the
 * console's), which are not API keys. A new key is printed once, when it is made; `list` shows ids and
 * labels only. A revocation applies to the admin API's next request in every process (admin keys are
 * looked up on each request, never cached).
 */
import { parseArgs } from 'node:util';
import { createAdminKey } from '../auth/admin-keys.js';
import type { Store } from '../store/store.js';
import { UsageError } from './usage-error.js';

type Output = (line: string) => void;

export const ADMIN_HELP = `  admin create [--label LABEL]
                              Create an admin key for the admin API (/admin/v1); prints it once
  admin list                  Admin keys with their labels and state (never the keys themselves)
  admin revoke ADMIN_KEY_ID   Revoke an admin key; the admin API refuses it from its next request on`;

const DEFAULT_LABEL = 'default';
const MAX_LABEL_LENGTH = 100;

export async function adminCommand(args: string[], store: Store, out: Output): Promise<void> {
  const [action, ...rest] = args;
  const { values, positionals } = parseArgs({ args: rest, options: { label: { type: 'string' } }, allowPositionals: true, strict: true });
  if (action !== 'create' && values.label !== undefined) throw new UsageError('--label is an option of admin create');

  if (action === 'create') {
    if (positionals.length > 0) throw new UsageError(`Unexpected argument "${positionals[0]}"; usage: admin create [--label LABEL]`);
    const label = values.label ?? DEFAULT_LABEL;
    if (label.length === 0 || label.length > MAX_LABEL_LENGTH) throw new UsageError(`--label must be 1 to ${MAX_LABEL_LENGTH} characters`);
    const { adminKey, record } = await createAdminKey(store, label);
    out(`Created admin key ${record.id} (label "${record.label}")`);
    out('');
    out(`Admin key: ${adminKey}`);
    out('');
    out('Save this key now: it is shown only this once and cannot be shown again (only its hash is stored).');
    out('Send it as Authorization: Bearer <admin key> to /admin/v1; it manages every account, and it is not an API key.');
    return;
  }
  if (action === 'list') {
    if (positionals.length > 0) throw new UsageError(`Unexpected argument "${positionals[0]}"; usage: admin list`);
    const keys = await store.listAdminKeys();
    if (keys.length === 0) out('No admin keys yet. Create one with: npm run keys -- admin create --label LABEL');
    for (const key of keys) out(`${key.id}  label "${key.label}"  created ${key.createdAt}  ${key.revokedAt ? `revoked ${key.revokedAt}` : 'active'}`);
    return;
  }
  if (action === 'revoke') {
    if (positionals.length !== 1) throw new UsageError('Usage: admin revoke ADMIN_KEY_ID');
    const id = positionals[0]!;
    if (!(await store.revokeAdminKey(id))) throw new UsageError(`No active admin key with id ${id} (unknown, or already revoked)`);
    out(`Revoked admin key ${id}; the admin API refuses it from now on.`);
    return;
  }
  throw new UsageError(`Unknown admin action "${action ?? ''}": expected create, list or revoke`);
}
