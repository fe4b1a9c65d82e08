/**
 * `npm run keys -- admin create|list|revoke`: through `runKeysCommand` on an in-memory store — the key is
 * printed once and authenticates, list never shows a key or hash, a revoked key stops authenticating —
 * its input errors, the help text, and once as a real program on a database file.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authenticateAdminKey, hashAdminKey } from '../../../src/auth/admin-keys.js';
import { AdminAuthError } from '../../../src/auth/errors.js';
import { HELP_TEXT, runKeysCommand } from '../../../src/cli/keys.js';
import { openSqliteStore } from '../../../src/store/sqlite-store.js';
import type { Store } from '../../../src/store/store.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const ADMIN_KEY = /kadm_[A-Za-z0-9_-]{43}/g;
const ADMIN_KEY_ID = /adm_[0-9a-f]{12}/;

let store: Store;
beforeEach(async () => {
  store = await openSqliteStore(':memory:');
});
afterEach(() => store.close());

async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runKeysCommand(
    argv,
    store,
    (l) => out.push(l),
    (l) => err.push(l),
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('admin', () => {
  it('create prints a working admin key exactly once, with its id and label', async () => {
    const r = await run('admin', 'create', '--label', 'console');
    expect(r.code).toBe(0);
    const keys = r.out.match(ADMIN_KEY)!;
    expect(keys).toHaveLength(1);
    expect(r.out).toMatch(/shown only this once/);
    const id = ADMIN_KEY_ID.exec(r.out)![0];
    expect(await authenticateAdminKey(store, `Bearer ${keys[0]}`)).toMatchObject({ id, label: 'console', revokedAt: null });
    expect((await run('admin', 'create')).code).toBe(0);
    expect((await store.listAdminKeys()).map((k) => k.label)).toEqual(['console', 'default']);
  });

  it('list shows ids, labels and state, never a key or its hash; revoke stops the key at once', async () => {
    expect((await run('admin', 'list')).out).toMatch(/No admin keys yet/);
    const created = await run('admin', 'create', '--label', 'ops');
    const key = created.out.match(ADMIN_KEY)![0];
    const id = ADMIN_KEY_ID.exec(created.out)![0];

    const listed = await run('admin', 'list');
    expect(listed.out).toMatch(new RegExp(`${id}  label "ops"  created \\S+  active`));
    expect(listed.out).not.toMatch(ADMIN_KEY);
    expect(listed.out).not.toContain(hashAdminKey(key));

    const revoked = await run('admin', 'revoke', id);
    expect(revoked).toMatchObject({ code: 0, out: expect.stringContaining(`Revoked admin key ${id}`) });
    await expect(authenticateAdminKey(store, `Bearer ${key}`)).rejects.toBeInstanceOf(AdminAuthError);
    expect((await run('admin', 'list')).out).toMatch(new RegExp(`${id} .* revoked \\d{4}-`));
  });

  it('refuses unknown actions, ids and arguments with exit code 1 and a hint', async () => {
    const cases: [string[], RegExp][] = [
      [['admin'], /Unknown admin action ""/],
      [['admin', 'rotate'], /Unknown admin action "rotate"/],
      [['admin', 'revoke'], /Usage: admin revoke ADMIN_KEY_ID/],
      [['admin', 'revoke', 'adm_000000000000'], /No active admin key with id adm_000000000000/],
      [['admin', 'create', 'extra'], /Unexpected argument "extra"/],
      [['admin', 'create', '--label', ''], /--label must be 1 to 100 characters/],
      [['admin', 'list', '--label', 'x'], /--label is an option of admin create/],
      [['admin', 'create', '--name', 'x'], /Unknown option '--name'/],
    ];
    for (const [argv, message] of cases) {
      const r = await run(...argv);
      expect(r.code, argv.join(' ')).toBe(1);
      expect(r.err).toMatch(message);
      expect(r.err).toContain('npm run keys -- help');
    }
    expect(await store.countAdminKeys()).toBe(0);
  });

  it('is in the help text', () => {
    expect(HELP_TEXT).toContain('admin create [--label LABEL]');
    expect(HELP_TEXT).toContain('admin list');
    expect(HELP_TEXT).toContain('admin revoke ADMIN_KEY_ID');
  });

  it('runs as a program on the database named by KUMA_DB_PATH', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-cli-admin-'));
    try {
      const dbPath = path.join(dir, 'cli.sqlite');
      const exec = (...args: string[]) =>
        promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/keys.ts', ...args], {
          cwd: repoRoot,
          env: { ...process.env, KUMA_DB_PATH: dbPath },
        });
      const key = (await exec('admin', 'create', '--label', 'spawned')).stdout.match(ADMIN_KEY)![0];
      expect((await exec('admin', 'list')).stdout).toContain('label "spawned"');
      const fileStore = await openSqliteStore(dbPath);
      try {
        expect(await authenticateAdminKey(fileStore, `Bearer ${key}`)).toMatchObject({ label: 'spawned' });
      } finally {
        await fileStore.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
