/**
 * `npm start` on an empty store, as a real process: it prints a dev API key and an admin key once, in its
 * banner and nowhere in its log lines; the admin key opens the admin API and is labelled as the first
 * start's. Started again on the same store, it prints neither (the admin key is made only for a store
 * that never had one).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DEV_ADMIN_KEY_LABEL } from '../../src/auth/admin-keys.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-first-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const ADMIN_KEY = /kadm_[A-Za-z0-9_-]{43}/g;

/** Starts src/main.ts and resolves with its stdout up to the end of its banner (the `Try:` line). */
async function start(): Promise<{ child: ChildProcess; stdout: () => string; banner: string; baseUrl: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: repoRoot,
    env: {
      ...process.env,
      PORT: '0',
      KUMA_HOST: '127.0.0.1',
      KUMA_DB_PATH: path.join(dir, 'kuma.sqlite'),
      KUMA_MODELS_MANIFEST: 'none',
      KUMA_STUDIO: 'false',
      KUMA_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  await new Promise<void>((resolve, reject) => {
    const check = () => (/\nTry: .*\n/.test(out) ? resolve() : undefined);
    child.stdout!.on('data', check);
    child.once('exit', (code) => reject(new Error(`kuma exited early (${code}): ${out}`)));
  });
  const port = /listening on http:\/\/localhost:(\d+)/.exec(out)![1];
  const banner = out.slice(out.indexOf('\nKuma is listening'));
  return { child, stdout: () => out, banner, baseUrl: `http://127.0.0.1:${port}` };
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

describe('first start', () => {
  it('prints a dev API key and an admin key once, never logs them; the next start prints neither', async () => {
    const first = await start();
    let adminKey: string;
    try {
      const adminKeys = first.banner.match(ADMIN_KEY) ?? [];
      expect(adminKeys).toHaveLength(1);
      adminKey = adminKeys[0]!;
      const apiKey = first.banner.match(UUID)![0];
      expect(first.banner).toMatch(/admin API \(http:\/\/localhost:\d+\/admin\/v1\)/);

      const whoami = await fetch(`${first.baseUrl}/admin/v1/whoami`, { headers: { authorization: `Bearer ${adminKey}` } });
      expect(whoami.status).toBe(200);
      expect(await whoami.json()).toMatchObject({ id: expect.stringMatching(/^adm_/), label: DEV_ADMIN_KEY_LABEL });
      expect((await fetch(`${first.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(200);
      // The admin key is not an API key, nor the other way round.
      expect((await fetch(`${first.baseUrl}/openai/v1/models`, { headers: { authorization: `Bearer ${adminKey}` } })).status).toBe(401);
      expect((await fetch(`${first.baseUrl}/admin/v1/whoami`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(403);

      // The log is written asynchronously: wait for the access-log lines of the requests above, so the
      // check below covers them (on a busy machine they can trail the responses).
      const logLinesOf = (text: string) => text.split('\n').filter((l) => l.startsWith('{'));
      await expect.poll(() => logLinesOf(first.stdout()).length, { timeout: 10_000 }).toBeGreaterThan(3);
      const everything = first.stdout();
      expect(everything.split(adminKey)).toHaveLength(2);
      expect(everything.split(apiKey)).toHaveLength(2);
      const logLines = logLinesOf(everything);
      for (const line of logLines) {
        expect(line).not.toContain(adminKey);
        expect(line).not.toContain(apiKey);
      }
    } finally {
      await stop(first.child);
    }

    const second = await start();
    try {
      expect(second.banner).not.toMatch(ADMIN_KEY);
      expect(second.banner).not.toMatch(UUID);
      expect((await fetch(`${second.baseUrl}/admin/v1/whoami`, { headers: { authorization: `Bearer ${adminKey}` } })).status).toBe(200);
    } finally {
      await stop(second.child);
    }
  }, 60_000);
});
