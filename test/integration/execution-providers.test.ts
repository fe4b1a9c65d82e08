/**
 * KUMA_ENGINE_EXECUTION_PROVIDERS, through `npm start` as a real process (src/main.ts): a provider this machine's
 * onnxruntime-node cannot run, or a name it does not have, stops the server at start with the documented
 * message (exit code 1, no stack, nothing prepared), also as a cluster's primary before any worker; `cpu`
 * serves as the variable unset does, byte for byte. And the list reaches the sessions in the model workers.
 *
 * The refusal of `cuda` is what a machine without onnxruntime-node's CUDA provider libraries must say
 * (this project's .npmrc skips their download, so a fresh clone has none); where they are installed, the
 * check passes or fails on the GPU instead, and that test is skipped.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../helpers/test-server.js';

const ortDir = path.dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
const ortVersion = (JSON.parse(fs.readFileSync(path.join(ortDir, 'package.json'), 'utf8')) as { version: string }).version;
const platform = `${process.platform}/${process.arch}`;
const cudaInstalled = fs.existsSync(path.join(ortDir, 'bin', 'napi-v6', platform, 'libonnxruntime_providers_cuda.so'));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-providers-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
/** One demo voice: enough for a model worker to create its sessions and speak. */
const manifest = path.join(dir, 'voice.json');
fs.writeFileSync(manifest, JSON.stringify({ models: [{ id: 'jifili-1', engine: 'vits-hf', dir: path.resolve('models/demo/vits-hf'), replicas: 1 }] }));

let runs = 0;
function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  const { KUMA_ENGINE_EXECUTION_PROVIDERS: _inherited, ...rest } = process.env;
  const db = path.join(dir, `run-${++runs}.sqlite`);
  return {
    ...rest,
    PORT: '0',
    KUMA_HOST: '127.0.0.1',
    KUMA_DB_PATH: db,
    KUMA_MODELS_MANIFEST: manifest,
    KUMA_DEMO_PACK: 'false',
    KUMA_STUDIO: 'false',
    KUMA_RATE_LIMITS: 'off',
    ...extra,
  };
}

/** Runs `npm start`'s entry point to its end: for starts that must be refused. */
async function refusedStart(extra: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; db: string }> {
  const childEnv = env(extra);
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout, stderr, db: childEnv.KUMA_DB_PATH! };
}

/** Starts `npm start`'s entry point, waits for its models, speaks one sentence as pcm, and stops it. */
async function speakOnce(extra: Record<string, string>): Promise<Buffer> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: env(extra), stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', () => (/\nTry: .*\n/.test(out) ? resolve() : undefined));
      child.once('exit', (code) => reject(new Error(`kuma exited early (${code}): ${out}`)));
    });
    const baseUrl = `http://127.0.0.1:${/listening on http:\/\/localhost:(\d+)/.exec(out)![1]}`;
    const apiKey = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.exec(out.slice(out.indexOf('\nKuma is listening')))![0];
    await expect.poll(async () => (await fetch(`${baseUrl}/readyz`)).status, { timeout: 30_000 }).toBe(200);
    const speech = await fetch(`${baseUrl}/openai/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'jifili-1', input: 'I ni ce. A ka kɛnɛ wa?', voice: 'alloy', response_format: 'pcm' }),
    });
    expect(speech.status).toBe(200);
    return Buffer.from(await speech.arrayBuffer());
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

/** The message is the operator's whole answer: it must be the config refusal alone, not a crash. */
function expectCleanRefusal(run: { code: number | null; stdout: string; stderr: string; db: string }): void {
  expect(run.code).toBe(1);
  expect(run.stderr.startsWith('Invalid configuration:\n  engineExecutionProviders (KUMA_ENGINE_EXECUTION_PROVIDERS): ')).toBe(true);
  expect(run.stderr).toContain(`Available in onnxruntime-node ${ortVersion} on ${platform}: cpu`);
  expect(run.stderr).toContain('Unset the variable, or set it to cpu, to run every model on the CPU.');
  expect(run.stderr).not.toMatch(/^\s+at /m); // no stack
  expect(run.stderr).not.toContain('[E:onnxruntime'); // onnxruntime's own log lines stay in the check's process
  expect(run.stdout).toBe(''); // no banner, no log line: it never started serving
  expect(fs.existsSync(run.db)).toBe(false); // nothing prepared: the store was never opened
}

describe('KUMA_ENGINE_EXECUTION_PROVIDERS at start', () => {
  it.skipIf(cudaInstalled || platform !== 'linux/x64')(
    'cuda without the CUDA provider libraries: stops, says why, what is available and how to install them',
    async () => {
      const run = await refusedStart({ KUMA_ENGINE_EXECUTION_PROVIDERS: 'cuda,cpu' });
      expectCleanRefusal(run);
      expect(run.stderr).toMatch(
        /"cuda" cannot run here: .*Failed to load shared library \(.*libonnxruntime_providers_shared\.so: cannot open shared object file/,
      );
      expect(run.stderr).toContain('Install them with: ONNXRUNTIME_NODE_INSTALL=1 npm rebuild onnxruntime-node');
      expect(run.stderr).toContain('Asked for: cuda,cpu.');
    },
  );

  it('a name onnxruntime-node does not have (a typo) is refused the same way, listing what it has', async () => {
    const run = await refusedStart({ KUMA_ENGINE_EXECUTION_PROVIDERS: 'CPU, cdua' });
    expectCleanRefusal(run);
    expect(run.stderr).toMatch(
      new RegExp(`"cdua" is not an execution provider of onnxruntime-node ${ortVersion.replace(/\./g, '\\.')} on ${platform} \\(it has: cpu, `),
    );
    expect(run.stderr).toContain('Asked for: cpu,cdua.'); // names are trimmed and lower-cased
  });

  it('a cluster primary refuses before it starts any worker', async () => {
    const run = await refusedStart({ KUMA_ENGINE_EXECUTION_PROVIDERS: 'cdua', KUMA_WORKERS: '2' });
    expectCleanRefusal(run);
  });

  it('cpu serves exactly as the variable unset: the same voice, byte for byte', async () => {
    const withCpu = await speakOnce({ KUMA_ENGINE_EXECUTION_PROVIDERS: 'cpu' });
    const unset = await speakOnce({});
    expect(withCpu.length).toBeGreaterThan(1000);
    expect(withCpu.equals(unset)).toBe(true);
  }, 90_000);
});

describe('the list reaches the model workers', () => {
  it.skipIf(cudaInstalled || platform !== 'linux/x64')(
    'an embedder that skips the start check gets its models refused by onnxruntime in the worker, named in /readyz',
    async () => {
      // startKuma does not run main.ts's check: the provider list goes straight to the sessions in the worker.
      const t = await startTestServer({ config: { modelsManifest: manifest, engineExecutionProviders: 'cuda', demoPack: false } });
      try {
        await expect(t.server.enginesReady).rejects.toThrow(/Failed to load shared library/);
        expect(t.logs.some((line) => /"executionProviders":\["cuda"\].*model sessions use these onnxruntime execution providers/.test(line))).toBe(true);
        const ready = await fetch(`${t.baseUrl}/readyz`);
        expect(ready.status).toBe(503);
        const { checks } = (await ready.json()) as { checks: { name: string; ready: boolean; detail?: string }[] };
        expect(checks).toContainEqual(
          expect.objectContaining({ name: 'models', ready: false, detail: expect.stringMatching(/Cuda: Failed to load shared library/) }),
        );
      } finally {
        await t.close();
      }
    },
  );
});
