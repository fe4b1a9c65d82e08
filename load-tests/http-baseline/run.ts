/**
 * http-baseline orchestrator (`npm run bench:http`): measures requests/s, p50/p99 latency and server CPU
 * per request of `GET /compat/v1/models` (Bearer key) for Kuma (uWebSockets.js) against the same routes
 * served by `node:http` (serve-node-http.ts), in one run on this machine, prints the kuma/node ratios and
 * appends the result to load-tests/RESULTS.md.
 *
 * Both servers run as child processes over one prepared SQLite file, with the access log on (bench-log.ts),
 * so the load generator never shares a thread with a server. The load generator is wrk when installed,
 * else autocannon (load-generators.ts); which one ran is printed and recorded. Runs alternate kuma, node,
 * kuma, node, ... so drift on the machine (thermal, noisy neighbours) hits both; each server's figure is
 * the median of its rounds.
 *
 * Flags: --duration S (10)  --connections N (50)  --warmup S (2)  --rounds N (2)
 *        --loadgen auto|wrk|autocannon (auto)  --threads N (wrk threads, 1)  --no-write
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateApiKey, hashApiKey } from '../../src/auth/api-keys.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { appendResults, gitCommit } from '../results.js';
import { clockTicks, pickLoadGenerator } from './load-generators.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const ENDPOINT = '/compat/v1/models';
const SERVERS = [
  { name: 'kuma', script: path.join(HERE, 'serve-kuma.ts') },
  { name: 'node', script: path.join(HERE, 'serve-node-http.ts') },
] as const;
type ServerName = (typeof SERVERS)[number]['name'];

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
    loadgen: { type: 'string', default: 'auto' },
    threads: { type: 'string', default: '1' },
    write: { type: 'boolean', default: true }, // accepted for symmetry; writing is the default
    'no-write': { type: 'boolean', default: false },
  },
});
function positiveInt(name: string, raw: string | undefined): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${raw}`);
  return n;
}
const [duration, connections, warmup, rounds, threads] = (['duration', 'connections', 'warmup', 'rounds', 'threads'] as const).map((k) =>
  positiveInt(k, flags[k]),
);
const params = { duration: duration!, connections: connections!, warmup: warmup!, rounds: rounds!, write: flags.write && !flags['no-write'] };

interface Child {
  name: ServerName;
  proc: ChildProcess;
  port: number;
  pid: number;
  logs: string[];
}
interface Sample {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  cpuMsPer1k: number;
  serverCpuPct: number;
  loadgenCpuPct: number;
}

// Everything cleanup must undo, whatever way we leave: the child processes (from the moment they are
// spawned, listening or not) and the temp dir.
const procs: ChildProcess[] = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-bench-'));
const loadgen = pickLoadGenerator(flags.loadgen!, dir, threads!);
// Both servers run the same way, as `npm start` runs Kuma: TypeScript through tsx's loader.
const serverRuntime = 'node --import tsx, as npm start runs';
process.on('exit', () => {
  for (const proc of procs) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void cleanup().finally(() => process.exit(130)));

async function cleanup(): Promise<void> {
  await Promise.all(
    procs.map(async (proc) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }),
  );
  fs.rmSync(dir, { recursive: true, force: true });
}

/** One account with a key in a fresh SQLite file; both servers open this same file (WAL allows it). */
async function prepareStore(dbPath: string): Promise<string> {
  const store = await openSqliteStore(dbPath);
  const account = await store.createAccount('bench', 10_000_000);
  const apiKey = generateApiKey();
  await store.createKey(account.id, hashApiKey(apiKey), 'bench');
  // Limits stay on (the limiter runs on every request, as in production) but cannot refuse the load:
  // far above what the run sends, and no cap on concurrent requests.
  await store.setRateLimits(account.id, { requestsPerMinute: 1_000_000_000, tokensPerMinute: 0, concurrent: 0 });
  await store.close();
  return apiKey;
}

/** Spawns node directly (not the tsx CLI, which forks again) so the pid we watch is the server itself. */
function startChild(name: ServerName, script: string, dbPath: string): Promise<Child> {
  const proc = spawn(process.execPath, ['--import', 'tsx', script, dbPath, dir], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  procs.push(proc);
  const logs: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 30 s:\n${logs.join('\n')}`)), 30_000);
    proc.once('exit', (code) => reject(new Error(`${name} exited (${code}) before listening:\n${logs.join('\n')}`)));
    readline.createInterface({ input: proc.stderr! }).on('line', (line) => logs.push(line));
    let ready = false;
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      // The entries print exactly this hello line; anything else is server output (pino warn/error),
      // kept to report problems under load.
      const hello = ready ? null : /^\{"port":(\d+),"pid":(\d+)\}$/.exec(line);
      if (!hello) return void logs.push(line);
      ready = true;
      clearTimeout(timer);
      resolve({ name, proc, port: Number(hello[1]), pid: Number(hello[2]), logs });
    });
  });
}

const CLK_TCK = clockTicks();

/** utime + stime of a process in ms, from /proc (Linux only; NaN elsewhere, shown as n/a). */
function processCpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name (which may contain spaces) start at field 3 (state).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

/** One load run; fails loudly unless every response was a 200 with no socket errors. */
async function load(child: Child, apiKey: string, seconds: number): Promise<Sample> {
  const cpuBefore = processCpuMs(child.pid);
  const started = performance.now();
  const result = await loadgen.run({
    url: `http://127.0.0.1:${child.port}${ENDPOINT}`,
    headers: { authorization: `Bearer ${apiKey}` },
    connections: params.connections,
    seconds,
  });
  const wallMs = performance.now() - started;
  const cpuMs = processCpuMs(child.pid) - cpuBefore;

  if (result.non2xx + result.errors > 0 || child.proc.exitCode !== null) {
    const alive = child.proc.exitCode === null;
    throw new Error(
      `${child.name}: ${result.non2xx} non-2xx, ${result.errors} socket errors/timeouts; server alive: ${alive}\n${child.logs.slice(-20).join('\n')}`,
    );
  }
  return {
    rps: result.requests / result.seconds,
    p50: result.p50Ms,
    p99: result.p99Ms,
    non2xx: result.non2xx,
    cpuMsPer1k: (cpuMs / result.requests) * 1000,
    serverCpuPct: (cpuMs / wallMs) * 100,
    loadgenCpuPct: (result.cpuMs / wallMs) * 100,
  };
}

/** Both servers must answer the benchmark request identically before their speed means anything. */
async function checkEquivalent(kuma: Child, node: Child, apiKey: string): Promise<void> {
  const get = async (c: Child, auth: boolean) => {
    const res = await fetch(`http://127.0.0.1:${c.port}${ENDPOINT}`, { headers: auth ? { authorization: `Bearer ${apiKey}` } : {} });
    return {
      status: res.status,
      type: res.headers.get('content-type'),
      id: res.headers.get('x-request-id'),
      limit: res.headers.get('x-ratelimit-limit-requests'),
      body: await res.text(),
    };
  };
  const [k, n, kNoKey, nNoKey] = await Promise.all([get(kuma, true), get(node, true), get(kuma, false), get(node, false)]);
  const problems = [
    k.status !== 200 && `kuma answered ${k.status}: ${k.body}`,
    n.status !== 200 && `node answered ${n.status}: ${n.body}`,
    k.body !== n.body && 'response bodies differ',
    (k.type !== n.type || !k.id || !n.id) && 'content-type / x-request-id differ',
    // Both run the limiter on every request (the same code path): both must send its headers.
    (k.limit === null || k.limit !== n.limit) && `x-ratelimit-limit-requests: kuma ${k.limit}, node ${n.limit}`,
    (kNoKey.status !== 401 || nNoKey.status !== 401) && `without a key: kuma ${kNoKey.status}, node ${nNoKey.status} (want 401)`,
  ].filter(Boolean);
  if (problems.length) throw new Error(`servers are not equivalent: ${problems.join('; ')}`);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const fmt = (x: number, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const describe = (s: Sample) =>
  `${fmt(s.rps, 0)} req/s, p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms, server CPU ${fmt(s.serverCpuPct, 0)}%, load generator CPU ${fmt(s.loadgenCpuPct, 0)}%`;

async function main(): Promise<void> {
  const dbPath = path.join(dir, 'bench.sqlite');
  const apiKey = await prepareStore(dbPath);
  const started = await Promise.all(SERVERS.map((s) => startChild(s.name, s.script, dbPath)));
  const byName = Object.fromEntries(started.map((c) => [c.name, c])) as Record<ServerName, Child>;
  await checkEquivalent(byName.kuma, byName.node, apiKey);

  const cpus = os.cpus();
  const cpuText = `${cpus[0]?.model ?? 'unknown CPU'} × ${cpus.length} cores (${os.platform()} ${os.arch()})`;
  const paramText = `${loadgen.description}, ${params.connections} connections, pipelining 1, access log on (info, to /dev/null), ${params.warmup} s warm-up + ${params.duration} s measured per run, ${params.rounds} round(s) alternating kuma/node, median of rounds`;
  console.log(`GET ${ENDPOINT}: ${paramText}; ${cpuText}, Node ${process.version}`);
  const samples: Record<ServerName, Sample[]> = { kuma: [], node: [] };
  for (let round = 1; round <= params.rounds; round++) {
    for (const { name } of SERVERS) {
      await load(byName[name], apiKey, params.warmup);
      const s = await load(byName[name], apiKey, params.duration);
      samples[name].push(s);
      console.log(`  round ${round} ${name}: ${describe(s)}`);
    }
  }

  const summary = SERVERS.map(({ name }) => {
    const pick = (f: (s: Sample) => number) => median(samples[name].map(f));
    return { name, rps: pick((s) => s.rps), p50: pick((s) => s.p50), p99: pick((s) => s.p99), non2xx: pick((s) => s.non2xx), cpu: pick((s) => s.cpuMsPer1k) };
  });
  const [kuma, node] = summary as [(typeof summary)[0], (typeof summary)[0]];
  const rows = [
    ['server', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'server CPU ms / 1k req'],
    ...summary.map((r) => [r.name, fmt(r.rps, 0), fmt(r.p50), fmt(r.p99), String(r.non2xx), fmt(r.cpu)]),
  ];
  const ratios =
    `kuma/node: req/s ${fmt(kuma.rps / node.rps)}× (higher is better for Kuma), p99 ${fmt(kuma.p99 / node.p99)}× ` +
    `(lower is better), CPU per request ${fmt(kuma.cpu / node.cpu)}× (lower is better)`;
  const maxLoadgen = Math.max(
    ...Object.values(samples)
      .flat()
      .map((s) => s.loadgenCpuPct),
  );
  const notes: string[] = [];
  // Near a full core per thread, the load generator (not the server) may set the req/s ceiling.
  if (maxLoadgen >= 90)
    notes.push(
      `the load generator reached ${fmt(maxLoadgen, 0)}% of one core: it may be the bottleneck, so the req/s ratio can understate the difference; server CPU ms per 1000 requests is the fairer efficiency figure.`,
    );
  if (cpus.length <= 2) notes.push(`only ${cpus.length} cores: server and load generator compete for them.`);
  const serverLogs = started.flatMap((c) => c.logs.map((l) => `${c.name}: ${l}`));
  if (serverLogs.length) notes.push(`servers logged ${serverLogs.length} warn/error line(s) during the run; first: ${serverLogs[0]}`);

  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  console.log(`\nmedian of ${params.rounds} round(s):`);
  for (const r of rows) console.log(`  ${r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ')}`);
  console.log(`\n${ratios}`);
  for (const note of notes) console.log(`note: ${note}`);

  if (!params.write) return;
  const section = [
    `## http-baseline — ${new Date().toISOString()}`,
    '',
    `- Commit: \`${gitCommit()}\``,
    `- Node: ${process.version}; servers as child processes (${serverRuntime}); load generator: ${loadgen.description}`,
    `- CPU: ${cpuText}`,
    `- Parameters: \`GET ${ENDPOINT}\` with a Bearer key, ${paramText}`,
    '',
    `| ${rows[0]!.join(' | ')} |`,
    `|${rows[0]!.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
    ...rows.slice(1).map((r) => `| ${r.join(' | ')} |`),
    '',
    `Ratios ${ratios}.`,
    '',
    ...SERVERS.flatMap(({ name }) => samples[name].map((s, i) => `- round ${i + 1} ${name}: ${describe(s)}`)),
    ...notes.map((n) => `- Note: ${n}`),
    '',
  ].join('\n');
  appendResults(section);
}

try {
  await main();
  await cleanup();
} catch (err) {
  console.error(`http-baseline FAILED: ${err instanceof Error ? err.message : String(err)}`);
  await cleanup();
  process.exit(1);
}
