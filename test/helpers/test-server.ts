/**
 * Starts a real Kuma server in-process on an ephemeral port with a fresh SQLite file, a funded account and
 * a key, and captures its log lines so tests can assert what was (and was not) logged.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type ConfigSchema } from '../../src/config/config.js';
import { startKuma, type KumaServer, type StartOptions } from '../../src/server.js';
import { generateApiKey, hashApiKey } from '../../src/auth/api-keys.js';
import type { Clock } from '../../src/api/model-catalog.js';
import type { z } from 'zod';

export interface TestServer {
  server: KumaServer;
  baseUrl: string;
  apiKey: string;
  accountId: string;
  keyId: string;
  logs: string[];
  dir: string;
  /** Creates another account with its own key. */
  newAccount(balanceMicros: number): Promise<{ apiKey: string; accountId: string; keyId: string }>;
  close(): Promise<void>;
}

export async function startTestServer(
  options: {
    clock?: Clock;
    config?: Partial<z.input<typeof ConfigSchema>>;
    extraRoutes?: StartOptions['extraRoutes'];
    engines?: StartOptions['engines'];
    balanceMicros?: number;
    /** Clock of the rate limiter (ms); limits are off unless `config.rateLimits` turns them on. */
    rateLimitClock?: () => number;
  } = {},
): Promise<TestServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-test-'));
  const config = loadConfig(
    {},
    {
      host: '127.0.0.1',
      port: 0,
      dbPath: path.join(dir, 'kuma.sqlite'),
      logLevel: 'info',
      tmpDir: dir,
      modelsManifest: '',
      rateLimits: false,
      studio: false,
      ...options.config,
    },
  );
  const logs: string[] = [];
  const server = await startKuma({
    config,
    clock: options.clock,
    extraRoutes: options.extraRoutes,
    engines: options.engines,
    rateLimitClock: options.rateLimitClock,
    logDestination: { write: (line: string) => void logs.push(line) },
  });
  const newAccount = async (balanceMicros: number) => {
    const account = await server.store.createAccount('test', balanceMicros);
    const apiKey = generateApiKey();
    const key = await server.store.createKey(account.id, hashApiKey(apiKey), 'test');
    return { apiKey, accountId: account.id, keyId: key.id };
  };
  const first = await newAccount(options.balanceMicros ?? 10_000_000);
  return {
    server,
    baseUrl: `http://127.0.0.1:${server.port}`,
    ...first,
    logs,
    dir,
    newAccount,
    async close() {
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** fetch with the test key. */
export function authed(apiKey: string, init: RequestInit = {}): RequestInit {
  return { ...init, headers: { authorization: `Bearer ${apiKey}`, ...(init.headers as Record<string, string>) } };
}
