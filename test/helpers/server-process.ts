/**
 * Starts Kuma in its own process (test/fixtures/serve-with-models.ts), as in production, for tests whose
 * behaviour depends on client and server not sharing one event loop, or that measure or kill the process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  apiKey: string;
  accountId: string;
  /** A key of a second account. */
  otherApiKey: string;
  pid: number;
  baseUrl: string;
}

/**
 * `ownProcessGroup`: the server leads a process group of its own (with the children it starts), so a test
 * can signal the whole group, as a terminal's Ctrl-C or a supervisor's group kill does, without reaching
 * the test runner.
 */
export async function startServerProcess(
  env: Record<string, string>,
  script = 'test/fixtures/serve-with-models.ts',
  options: { ownProcessGroup?: boolean } = {},
): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    // Limits off unless the test turns them on: several tests send hundreds of requests from one key.
    env: { ...process.env, KUMA_RATE_LIMITS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: options.ownProcessGroup ?? false,
  });
  const line = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`server exited early (${code})`)));
  });
  const info = JSON.parse(line) as { port: number; apiKey: string; accountId: string; otherApiKey: string; pid: number };
  return { child, ...info, baseUrl: `http://127.0.0.1:${info.port}` };
}
