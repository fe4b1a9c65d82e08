/**
 * scripts/cluster-demo.sh as a child of a load test: started on a port range of the caller's choosing and
 * waited for (its "cluster-demo: ready <demo.env>" line), its demo.env read, a node killed and started again
 * the way the script starts it (<run dir>/start-node.sh), HAProxy's view of each node read from its stats
 * CSV, and everything stopped (SIGTERM to the script, whose trap stops the nodes, HAProxy and PostgreSQL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface DemoCluster {
  url: string;
  statsUrl: string;
  apiKey: string;
  adminKey: string;
  databaseUrl: string;
  runDir: string;
  /** The pid of node `n` (1..3) as its pid file says now. */
  pidOf(n: number): number;
  /** Starts node `n` again with the script's own command (start-node.sh), which rewrites its pid file. */
  restartNode(n: number): Promise<void>;
  /** HAProxy's status of each server (`UP`, `DOWN`, `UP 1/2`, `DOWN 1/2`, …), from the stats CSV. */
  serverStates(): Promise<Map<string, string>>;
  stop(): Promise<void>;
}

export async function startDemoCluster(options: { basePort: number; runDir: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<DemoCluster> {
  const child = spawn('bash', [path.join(ROOT, 'scripts', 'cluster-demo.sh')], {
    cwd: ROOT,
    env: { ...process.env, ...options.env, KUMA_DEMO_PORT: String(options.basePort), KUMA_DEMO_RUN_DIR: options.runDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = () => stopChild(child, exited);
  // Should this process end without stopping the demo (an exception, Ctrl-C), the demo stops with it.
  const onExit = () => child.kill('SIGTERM');
  process.once('exit', onExit);

  const transcript: string[] = [];
  child.stderr!.on('data', (chunk: Buffer) => transcript.push(chunk.toString()));
  const envFile = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`cluster-demo.sh not ready after ${options.timeoutMs ?? 300_000} ms`)), options.timeoutMs ?? 300_000);
    const lines = readline.createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      transcript.push(line + '\n');
      const ready = /^cluster-demo: ready (.+)$/.exec(line);
      if (ready) (clearTimeout(timer), resolve(ready[1]!));
    });
    void exited.then((code) => (clearTimeout(timer), reject(new Error(`cluster-demo.sh exited (${code}) before it was ready:\n${transcript.join('')}`))));
  }).catch(async (err) => {
    await stop();
    throw err;
  });

  const env = Object.fromEntries(
    fs
      .readFileSync(envFile, 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  const runDir = env.KUMA_DEMO_RUN_DIR!;
  return {
    url: env.KUMA_DEMO_URL!,
    statsUrl: env.KUMA_DEMO_STATS_URL!,
    apiKey: env.KUMA_DEMO_API_KEY!,
    adminKey: env.KUMA_DEMO_ADMIN_KEY!,
    databaseUrl: env.KUMA_DEMO_DATABASE_URL!,
    runDir,
    pidOf: (n) => Number(fs.readFileSync(path.join(runDir, `node${n}.pid`), 'utf8').trim()),
    restartNode: (n) =>
      new Promise((resolve, reject) => {
        const p = spawn('bash', [path.join(runDir, 'start-node.sh'), String(n)], { cwd: ROOT, stdio: 'ignore' });
        p.once('error', reject);
        p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`start-node.sh ${n} exited ${code}`))));
      }),
    async serverStates() {
      const res = await fetch(`${env.KUMA_DEMO_STATS_URL};csv`);
      const [header, ...rows] = (await res.text()).trim().split('\n');
      const columns = header!.replace(/^# /, '').split(',');
      const status = columns.indexOf('status');
      const states = new Map<string, string>();
      for (const row of rows) {
        const cells = row.split(',');
        if (cells[0] === 'kuma_nodes' && cells[1] !== 'BACKEND') states.set(cells[1]!, cells[status]!);
      }
      return states;
    },
    async stop() {
      process.off('exit', onExit);
      await stop();
    },
  };
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  // The script stops HAProxy, then the nodes (SIGTERM, up to 15 s, then SIGKILL), then PostgreSQL.
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}
