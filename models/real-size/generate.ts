/**
 * `npm run models:real-size`: writes the real-size benchmark pack — random weights in the exact architectures
 * and export layouts of the real Bambara checkpoints — into a cache folder outside git, then loads every model
 * through Kuma's engine registry exactly as a real export would be loaded (a model that does not load fails the
 * command). Not used by `npm test`: the pack is ≈ 5.5 GB (NLLB-600M alone 3.5 GB; loaded, it holds ≈ 6 GB of
 * memory) and only the benchmarks read it.
 *
 * Why Python: the architectures (wav2vec2, XLS-R, QuartzNet, FastConformer, NLLB, VITS) are a few hundred
 * lines of PyTorch each, and torch.onnx.export writes the same graphs the real exporters (optimum, NeMo) write
 * from the same modules; hand-building them with the TypeScript graph builder would mean re-deriving every
 * operator by hand.
 * Debian's python3-torch and python3-onnx are installed here when missing (as root, with apt-get).
 *
 *   npm run models:real-size [-- --out DIR] [--only wav2vec2-base,quartznet15x5] [--seed N] [--force] [--no-verify]
 *
 * The folder defaults to $KUMA_REAL_SIZE_DIR, else ~/.cache/kuma/real-size. It gets `kuma-models.json`, a
 * manifest serving the pack (KUMA_MODELS_MANIFEST=<folder>/kuma-models.json npm start), and `PARAMS.md`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngineRegistry } from '../../src/engines/engine-registry.js';
import { asrManifest, packManifest, paramsTable, verificationManifest, type PackedModel } from './pack-manifest.js';
import { writeTsSidecars } from './sidecars.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PYTHON = '/usr/bin/python3';
const DEBIAN_PACKAGES = ['python3-torch', 'python3-onnx', 'python3-numpy'];

export function defaultPackDir(): string {
  return process.env.KUMA_REAL_SIZE_DIR || path.join(os.homedir(), '.cache', 'kuma', 'real-size');
}

function flag(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

function pythonHasTorch(): boolean {
  return spawnSync(PYTHON, ['-c', 'import torch, onnx'], { stdio: 'ignore' }).status === 0;
}

function ensurePython(): void {
  if (pythonHasTorch()) return;
  const root = process.getuid?.() === 0;
  if (!root || spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error(
      `The pack generator needs Debian's ${DEBIAN_PACKAGES.join(', ')} (${PYTHON} with torch and onnx). Install them as root: apt-get install ${DEBIAN_PACKAGES.join(' ')}`,
    );
  }
  console.log(`Installing ${DEBIAN_PACKAGES.join(', ')} with apt-get (once)…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', ...DEBIAN_PACKAGES],
  ]) {
    const run = spawnSync('apt-get', args, { stdio: 'inherit', env });
    if (run.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${run.status})`);
  }
  if (!pythonHasTorch()) throw new Error(`${PYTHON} still cannot import torch and onnx after the install`);
}

function runPython(out: string): void {
  const args = [path.join(HERE, 'pack.py'), '--out', out];
  for (const name of ['only', 'seed']) {
    const value = flag(name);
    if (value) args.push(`--${name}`, value);
  }
  if (process.argv.includes('--force')) args.push('--force');
  // torch's exporter prints tracer warnings for every shape-dependent branch: noise, not news.
  const run = spawnSync(PYTHON, ['-W', 'ignore', ...args], { stdio: 'inherit', env: { ...process.env, PYTHONUNBUFFERED: '1' } });
  if (run.status !== 0) throw new Error(`pack.py failed (exit ${run.status})`);
}

function readPacked(out: string): PackedModel[] {
  return fs
    .readdirSync(out)
    .filter((name) => fs.existsSync(path.join(out, name, '.complete.json')))
    .map((name) => ({ dir: name, ...(JSON.parse(fs.readFileSync(path.join(out, name, '.complete.json'), 'utf8')) as Omit<PackedModel, 'dir'>) }));
}

async function verify(manifestFile: string): Promise<void> {
  const registry = EngineRegistry.fromManifest(manifestFile, 'djelia', { intraOpThreads: 1, interOpThreads: 1, maxAutoReplicas: 1 });
  const started = Date.now();
  try {
    await registry.start();
    console.log(`Every model loaded and warmed in Kuma's registry (${registry.ids().join(', ')}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await registry.close();
  }
}

async function main(): Promise<void> {
  const out = path.resolve(flag('out') ?? defaultPackDir());
  fs.mkdirSync(out, { recursive: true });
  ensurePython();
  runPython(out);
  const packed = readPacked(out);
  // The tokenizer files of NLLB come from the TypeScript tokenizer builder, after pack.py wrote the model.
  writeTsSidecars(out, packed);
  const write = (name: string, value: unknown) => fs.writeFileSync(path.join(out, name), `${JSON.stringify(value, null, 2)}\n`);
  const manifestFile = path.join(out, 'kuma-models.json');
  write('kuma-models.json', packManifest(packed));
  for (const model of packed.filter((m) => m.engine.startsWith('ctc-'))) write(`kuma-models.${model.dir}.json`, asrManifest(model));
  write('verify-models.json', verificationManifest(packed));
  fs.writeFileSync(path.join(out, 'PARAMS.md'), paramsTable(packed));
  console.log(paramsTable(packed));
  if (!process.argv.includes('--no-verify')) await verify(path.join(out, 'verify-models.json'));
  console.log(`Pack: ${out}\nServe it: KUMA_MODELS_MANIFEST=${manifestFile} npm start`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: Error) => {
    console.error(err.message);
    process.exit(1);
  });
}
