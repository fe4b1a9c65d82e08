/**
 * Starts the server under test for the model load tests (asr, tts) as its own process — Kuma with the
 * given manifest entries over the demo pack — and stops it (and removes its files) afterwards.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

export interface ModelServer {
  port: number;
  apiKey: string;
  /** A key of a second account (serve-with-models.ts). */
  otherApiKey: string;
  pid: number;
  stop(): Promise<void>;
}

/** `cwd`: another checkout of Kuma to run instead of this one (a baseline, compared in the same run). */
export async function startModelServer(models: Array<Record<string, unknown>>, cwd?: string): Promise<ModelServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-load-'));
  const manifest = path.join(dir, 'manifest.json');
  fs.writeFileSync(manifest, JSON.stringify({ models }));
  // KUMA_BENCH_NODE_FLAGS: extra node flags for the server (e.g. --trace-gc, which NODE_OPTIONS refuses).
  const nodeFlags = (process.env.KUMA_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  // --no-memory-reducer: as npm start runs the server (src/observability/gc-pauses.ts).
  const child = spawn(
    process.execPath,
    [
      '--no-memory-reducer',
      ...nodeFlags,
      ...(process.env.KUMA_BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.KUMA_BENCH_PROF] : []),
      '--import',
      'tsx',
      'load-tests/serve-with-models.ts',
      path.join(dir, 'kuma.sqlite'),
      manifest,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'], ...(cwd ? { cwd } : {}) },
  );
  const hello = await new Promise<{ port: number; apiKey: string; otherApiKey: string; pid: number }>((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout! });
    let greeted = false;
    lines.on('line', (line) => {
      // The hello is the first JSON line (node flags such as --trace-gc may print before it). After it, stdout is
      // the server's log (warnings and errors): shown, so a failing run says why, and read, so a full pipe never
      // blocks the server.
      if (greeted || !line.startsWith('{')) return void process.stderr.write(`server: ${line}\n`);
      greeted = true;
      resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
  });
  // Models load and warm in the background after the server listens: a benchmark that measured meanwhile
  // (its model-only baseline, its first level) would share the cores with the loading.
  for (const until = Date.now() + 300_000; ; await new Promise((resolve) => setTimeout(resolve, 200))) {
    const ready = await fetch(`http://127.0.0.1:${hello.port}/readyz`).then(
      (res) => res.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > until) throw new Error("the server's models were not ready within 300 s");
  }
  return {
    ...hello,
    async stop() {
      child.stdin!.end(); // the server exits when its stdin closes
      await new Promise((resolve) => child.once('exit', resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
