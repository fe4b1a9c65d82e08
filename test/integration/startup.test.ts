/**
 * Starting `npm start` (src/main.ts) as a newcomer does: a second server on a busy port exits 1 naming the
 * port (the port is bound exclusively: uSockets' SO_REUSEPORT let two servers split one port's connections);
 * a TLS path that does not exist is reported before any model loads, naming KUMA_TLS_CERT, with exit code 1
 * every time (it used to surface after the models had loaded, sometimes as a native abort, exit 134); one
 * "ready" line follows the models, with the API, Studio and console URLs in https:// when TLS is on; and the
 * models whose every id is retired are not loaded.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Started {
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  stop: () => Promise<void>;
}

/** src/main.ts in its own process with these settings (no models, no Studio, unless the test sets them). */
function start(env: Record<string, string>): Started {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: repoRoot,
    env: { ...process.env, KUMA_HOST: '127.0.0.1', KUMA_MODELS_MANIFEST: 'none', KUMA_STUDIO: 'false', KUMA_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    stdout: () => out,
    stderr: () => err,
    exited,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The first match of `pattern` in the process's stdout, once it is there (fails at once if the process exits). */
async function waitFor(started: Started, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  let exited = false;
  void started.exited.then(() => (exited = true));
  await expect.poll(() => pattern.test(started.stdout()) || exited, { timeout: timeoutMs, interval: 50 }).toBe(true);
  const match = pattern.exec(started.stdout());
  if (!match) throw new Error(`no ${pattern} in: ${started.stdout()}\n${started.stderr()}`);
  return match;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

describe('start-up', () => {
  it('a second server on a busy port exits 1 with a message naming the port', async () => {
    // A port asked for by number (as KUMA_PORT=8080 is): one the kernel hands out for 0 is never shared anyway.
    const port = String(await freePort());
    const first = start({ PORT: port, KUMA_DB_PATH: path.join(dir, 'first.sqlite') });
    try {
      await waitFor(first, /listening on http:\/\/localhost:(\d+)/, 30_000);
      const second = start({ PORT: port, KUMA_DB_PATH: path.join(dir, 'second.sqlite') });
      expect(await second.exited).toBe(1);
      expect(second.stderr()).toContain(`port ${port}`);
      expect(second.stderr()).toMatch(/address in use/);
      expect(second.stderr()).not.toMatch(/\n\s+at /); // one message, no stack
      // The first one still serves, alone.
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      await first.stop();
    }
  }, 60_000);

  it('a missing TLS certificate is refused before any model loads, naming KUMA_TLS_CERT, with exit 1 in 20 of 20 starts', async () => {
    const missing = path.join(dir, 'no-such-cert.pem');
    const outcomes: Array<{ code: number | null; stderr: string; stdout: string }> = [];
    // The demo manifest: were the file not checked first, the models would start loading.
    const env = {
      KUMA_TLS_CERT: missing,
      KUMA_TLS_KEY: 'test/fixtures/tls/localhost-key.pem',
      KUMA_MODELS_MANIFEST: 'models/kuma-models.json',
      KUMA_DB_PATH: path.join(dir, 'tls.sqlite'),
      PORT: '0',
    };
    for (let batch = 0; batch < 5; batch++) {
      const runs = Array.from({ length: 4 }, () => start(env));
      for (const run of runs) outcomes.push({ code: await run.exited, stderr: run.stderr(), stdout: run.stdout() });
    }
    expect(outcomes).toHaveLength(20);
    for (const outcome of outcomes) {
      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain('KUMA_TLS_CERT');
      expect(outcome.stderr).toContain(`${missing} does not exist`);
      expect(outcome.stdout).not.toMatch(/model ready|listening/);
    }
  }, 120_000);

  it('a certificate and a key that do not belong together are refused by name', async () => {
    const run = start({
      KUMA_TLS_CERT: 'test/fixtures/tls/localhost-key.pem',
      KUMA_TLS_KEY: 'test/fixtures/tls/localhost-key.pem',
      KUMA_DB_PATH: path.join(dir, 'pem.sqlite'),
    });
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toMatch(/KUMA_TLS_CERT\): test\/fixtures\/tls\/localhost-key\.pem is not a PEM certificate/);
  }, 30_000);

  it('prints one ready line once the models are warm, in https:// with TLS, and leaves the retired models unloaded', async () => {
    const run = start({
      PORT: '0',
      KUMA_DB_PATH: path.join(dir, 'ready.sqlite'),
      KUMA_MODELS_MANIFEST: 'models/kuma-models.json',
      KUMA_STUDIO: 'true',
      KUMA_TLS_CERT: 'test/fixtures/tls/localhost-cert.pem',
      KUMA_TLS_KEY: 'test/fixtures/tls/localhost-key.pem',
    });
    try {
      const port = (await waitFor(run, /listening on https:\/\/localhost:(\d+)/, 60_000))[1]!;
      await waitFor(run, /^Kuma is ready: .*\n/m, 120_000);
      const out = run.stdout();
      const base = `https://localhost:${port}`;
      expect(out.match(/Kuma is ready.*$/gm)).toEqual([`Kuma is ready: API ${base}/openai/v1  ·  Studio ${base}/  ·  console ${base}/#console`]);
      expect(out).not.toContain('http://localhost');
      const logs = out
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg: string; model?: string; models?: string[] });
      // The ready line comes after every model is warm.
      expect(out.indexOf('\nKuma is ready:')).toBeGreaterThan(out.lastIndexOf('"model ready"'));
      const loaded = logs
        .filter((l) => l.msg === 'model ready')
        .map((l) => l.model)
        .sort();
      expect(loaded).toEqual(['banjugu-1', 'jifili-1', 'sunjata-1', 'vad']);
      // The default retirement date has passed: the legacy-only models are named as left unloaded.
      expect(logs.find((l) => l.msg.startsWith('not loading retired models'))?.models?.sort()).toEqual(['djelia-asr-v1', 'djelia-tts-v1', 'djelia-tts-v2']);
    } finally {
      await run.stop();
    }
  }, 180_000);
});
