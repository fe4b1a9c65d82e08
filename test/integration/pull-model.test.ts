/**
 * `npm run models:pull` end to end against a local imitation of the Hugging Face hub serving demo-pack
 * model folders: a full pull matches the source bytes; a connection cut midway and a leftover .partial
 * both resume with `Range: bytes=N-`; altered bytes are rejected and leave no file; 404, gated 401, 5xx and
 * a dead endpoint give clear errors; the token never reaches the storage host; and a pulled model written
 * into a manifest is served by Kuma, and still after a restart.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureDemoPack, DEFAULT_DEMO_DIR } from '../../models/generator/generate-demo-pack.js';
import { speakDemo } from '../../models/generator/demo-voice.js';
import { runPullCommand } from '../../src/cli/pull-model.js';
import { loadConfig } from '../../src/config/config.js';
import { HubError } from '../../src/models-hub/hub-errors.js';
import { pullModel, STATE_FILE, type PullOptions } from '../../src/models-hub/pull.js';
import { startKuma } from '../../src/server.js';
import { FakeHub } from './fake-hf-hub.js';

const W2V = 'kuma-demo/ctc-wav2vec2';
const NLLB = 'kuma-demo/nllb';
const GATED = 'kuma-demo/gated';
const FAST_RETRY = { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 };

let hub: FakeHub;
let tmp: string;
let log: string[];

beforeAll(async () => {
  await ensureDemoPack();
  hub = await new FakeHub([
    { id: W2V, dir: path.join(DEFAULT_DEMO_DIR, 'ctc-wav2vec2') },
    { id: NLLB, dir: path.join(DEFAULT_DEMO_DIR, 'nllb') },
    { id: GATED, dir: path.join(DEFAULT_DEMO_DIR, 'vits-sherpa'), gatedToken: 'hf_secret' },
  ]).start();
});
afterAll(() => hub.close());
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-pull-'));
  log = [];
  hub.requests.length = 0;
});
afterEach(() => {
  Object.assign(hub, { ignoreRange: false, infoWithoutSizes: false });
  hub.cutOnce.clear();
  hub.corrupt.clear();
  hub.failNext.length = 0;
  fs.rmSync(tmp, { recursive: true, force: true });
});

const pull = (repo: string, extra: Partial<PullOptions> = {}) =>
  pullModel({ repo, dest: path.join(tmp, 'out'), endpoint: hub.url, retry: FAST_RETRY, progress: { write: (t: string) => void log.push(t) }, ...extra });

function expectSameTree(repoDir: string, dest: string): void {
  const walk = (dir: string, sub = ''): string[] =>
    fs
      .readdirSync(path.join(dir, sub), { withFileTypes: true })
      .flatMap((e) => (e.isDirectory() ? walk(dir, path.join(sub, e.name)) : e.name.startsWith('.') ? [] : [path.join(sub, e.name)]));
  const files = walk(repoDir).sort();
  expect(walk(dest).sort()).toEqual(files);
  for (const f of files) expect(fs.readFileSync(path.join(dest, f)).equals(fs.readFileSync(path.join(repoDir, f))), f).toBe(true);
}

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runPullCommand(argv, {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env: {},
    cwd: tmp,
    progress: null,
    client: { retry: FAST_RETRY },
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('pulling a repo', () => {
  it('downloads every file byte for byte, nested folders included, and redirects large files to storage', async () => {
    const result = await pull(NLLB);
    expectSameTree(path.join(DEFAULT_DEMO_DIR, 'nllb'), path.join(tmp, 'out'));
    expect(result.downloaded).toContain('onnx/decoder_model_merged.onnx');
    expect(hub.requests.some((r) => r.server === 'storage' && r.url.includes('/blobs/'))).toBe(true);
    expect(fs.readdirSync(path.join(tmp, 'out')).filter((f) => f.endsWith('.partial'))).toEqual([]);
    expect(log.join('')).toMatch(/\[\d+\/7\] onnx\/encoder_model\.onnx/);
  });

  it('uses the paginated tree listing when the info API gives no sizes', async () => {
    hub.infoWithoutSizes = true;
    await pull(W2V);
    expectSameTree(path.join(DEFAULT_DEMO_DIR, 'ctc-wav2vec2'), path.join(tmp, 'out'));
    expect(hub.requests.filter((r) => r.url.includes('/tree/')).length).toBe(2);
  });

  it('--include selects files with huggingface-cli patterns', async () => {
    const result = await pull(NLLB, { include: ['onnx/', '*.json'], exclude: ['onnx/decoder*'] });
    expect(result.files.map((f) => f.path)).toEqual([
      'config.json',
      'generation_config.json',
      'onnx/encoder_model.onnx',
      'special_tokens_map.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
  });

  it('an --include pattern that matches nothing stops before downloading, listing the repo files', async () => {
    await expect(pull(NLLB, { include: ['*.json', 'onnx/encoder_model_q8.onnx'] })).rejects.toThrow(
      /^--include 'onnx\/encoder_model_q8\.onnx' matches no file of kuma-demo\/nllb@main; its files are: config\.json, .*onnx\/encoder_model\.onnx/,
    );
    expect(hub.requests.filter((r) => r.url.includes('/resolve/'))).toEqual([]);
  });

  it('a second pull finds every file verified and downloads nothing', async () => {
    await pull(W2V);
    hub.requests.length = 0;
    const again = await pull(W2V);
    expect(again.downloaded).toEqual([]);
    expect(again.upToDate.length).toBe(5);
    expect(hub.requests.map((r) => r.url)).toEqual([expect.stringContaining('/api/models/')]);
    expect(fs.existsSync(path.join(tmp, 'out', STATE_FILE))).toBe(true);
  });
});

describe('resuming', () => {
  it('a connection cut midway is retried with Range: bytes=N- and the file completes correctly', async () => {
    hub.cutOnce.set('model.onnx', 100_000);
    await pull(W2V);
    const ranged = hub.requests.filter((r) => r.server === 'storage' && r.range);
    expect(ranged.length).toBe(1);
    const offset = Number(/^bytes=(\d+)-$/.exec(ranged[0]!.range!)?.[1]);
    expect(offset).toBeGreaterThan(0);
    expect(offset).toBeLessThanOrEqual(100_000);
    expectSameTree(path.join(DEFAULT_DEMO_DIR, 'ctc-wav2vec2'), path.join(tmp, 'out'));
    expect(log.join('')).toMatch(/retrying \(1\/2\) from byte \d+/);
  });

  it('a .partial left by an interrupted run is continued from its end', async () => {
    const source = hub.fileOf(W2V, 'model.onnx');
    fs.mkdirSync(path.join(tmp, 'out'));
    fs.writeFileSync(path.join(tmp, 'out', 'model.onnx.partial'), source.subarray(0, 50_000));
    await pull(W2V);
    expect(hub.requests.filter((r) => r.range).map((r) => r.range)).toEqual(['bytes=50000-', 'bytes=50000-']); // hub redirect, then storage
    expect(fs.readFileSync(path.join(tmp, 'out', 'model.onnx')).equals(source)).toBe(true);
    expect(log.join('')).toContain('resuming at 50.0 kB');
  });

  it('a server that ignores Range (200) makes it start over, still correctly', async () => {
    hub.ignoreRange = true;
    const source = hub.fileOf(W2V, 'model.onnx');
    fs.mkdirSync(path.join(tmp, 'out'));
    fs.writeFileSync(path.join(tmp, 'out', 'model.onnx.partial'), source.subarray(0, 50_000));
    await pull(W2V);
    expect(fs.readFileSync(path.join(tmp, 'out', 'model.onnx')).equals(source)).toBe(true);
    expect(log.join('')).toContain('ignored the Range request');
  });
});

describe('refusing bad content and reporting errors clearly', () => {
  it('altered bytes fail the sha256 check: clear error, neither the file nor its .partial is left', async () => {
    hub.corrupt.add('model.onnx');
    const err = await pull(W2V).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HubError);
    expect((err as HubError).kind).toBe('checksum');
    expect((err as Error).message).toMatch(
      /^Checksum mismatch for model\.onnx: expected sha256 [0-9a-f]{64}, got sha256 [0-9a-f]{64}\. The download was deleted/,
    );
    expect(fs.existsSync(path.join(tmp, 'out', 'model.onnx'))).toBe(false);
    expect(fs.existsSync(path.join(tmp, 'out', 'model.onnx.partial'))).toBe(false);
  });

  it('an altered small file fails its git blob id check', async () => {
    hub.corrupt.add('vocab.json');
    await expect(pull(W2V)).rejects.toThrow(/Checksum mismatch for vocab\.json: expected git blob/);
    expect(fs.existsSync(path.join(tmp, 'out', 'vocab.json'))).toBe(false);
  });

  it('an unknown repo is a 404 that names the repo (exit code 1)', async () => {
    const { code, err } = await cli('nobody/missing', '--endpoint', hub.url);
    expect(code).toBe(1);
    expect(err).toContain(`Error: Repository nobody/missing not found on ${hub.url}: check the repo id. If it is a private repo, set HF_TOKEN`);
  });

  it('a gated repo answers 401 with a hint about HF_TOKEN; with the token it downloads, and the token never goes to storage', async () => {
    const refused = await cli(GATED, '--endpoint', hub.url);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/kuma-demo\/gated is a gated repo: accept its conditions .* set HF_TOKEN to a Hugging Face access token/);
    hub.requests.length = 0;
    await pull(GATED, { token: 'hf_secret' });
    expect(hub.requests.filter((r) => r.server === 'hub').every((r) => r.authorization === 'Bearer hf_secret')).toBe(true);
    expect(hub.requests.filter((r) => r.server === 'storage').length).toBeGreaterThan(0);
    expect(hub.requests.filter((r) => r.server === 'storage').every((r) => r.authorization === undefined)).toBe(true);
  });

  it('5xx answers are retried with backoff; a dead endpoint is a network error after the retries', async () => {
    hub.failNext.push(503, 502);
    await pull(W2V);
    expect(hub.requests.slice(0, 3).map((r) => r.url)).toEqual(Array(3).fill(expect.stringContaining('/api/models/kuma-demo/ctc-wav2vec2/revision/main')));
    // A port that was just free: nothing listens there.
    const probe = net.createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const dead = `http://127.0.0.1:${(probe.address() as net.AddressInfo).port}`;
    await new Promise((resolve) => probe.close(resolve));
    const err = await pullModel({ repo: W2V, dest: path.join(tmp, 'x'), endpoint: dead, retry: FAST_RETRY }).catch((e: Error) => e);
    expect((err as Error).message).toBe(`Connection to ${dead.slice(7)} refused after 3 attempts (HF_ENDPOINT or --endpoint is ${dead})`);
  });
});

describe('the pulled model is served', () => {
  it('pull --manifest --id sunjata-1 → Kuma loads and transcribes it; after a restart it still does', async () => {
    const manifest = path.join(tmp, 'models', 'manifest.json');
    const pulled = await cli(W2V, '--endpoint', hub.url, '--dest', 'models/mms-demo', '--manifest', 'models/manifest.json', '--id', 'sunjata-1');
    expect(pulled.err).toContain('Engine ctc-wav2vec2');
    expect(pulled.code).toBe(0);
    expect(pulled.out).toBe('{ "id": "sunjata-1", "engine": "ctc-wav2vec2", "dir": "mms-demo" }');
    expect(JSON.parse(fs.readFileSync(manifest, 'utf8'))).toEqual({ models: [{ id: 'sunjata-1', engine: 'ctc-wav2vec2', dir: 'mms-demo' }] });

    const text = 'i ni ce ka kɛnɛ';
    for (const round of ['first start', 'after restart']) {
      const config = loadConfig(
        {},
        { host: '127.0.0.1', port: 0, dbPath: path.join(tmp, 'kuma.sqlite'), logLevel: 'silent', modelsManifest: manifest, demoPack: false },
      );
      const server = await startKuma({ config });
      try {
        await server.enginesReady;
        const ready = await fetch(`http://127.0.0.1:${server.port}/readyz`);
        expect(ready.status, round).toBe(200);
        const segments: string[] = [];
        for await (const s of server.engines!.get('sunjata-1')!.stream<{ text: string }>('transcribe', { samples: speakDemo(text, 16000).samples }))
          segments.push(s.text);
        expect(segments.join(' '), round).toBe(text);
      } finally {
        await server.close();
      }
    }
  }, 60_000);
});
