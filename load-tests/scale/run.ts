/**
 * bench:scale — what more processes and a shared ledger cost or buy on this machine, through the real entry
 * point (`src/main.ts`, demo models):
 *   - throughput of KUMA_WORKERS=1 vs 2 on REST transcription and speech (and chat translation);
 *   - SQLite vs PostgreSQL as the store, one process, same requests: the ledger's cost per request.
 * Each configuration is a fresh server tree on a fresh store, all running side by side while the
 * measurements alternate between them in slices; every client is a closed loop on its own
 * keep-alive connection, which first asks /healthz which process it reached, so the share of the work each
 * worker did (how evenly the kernel's SO_REUSEPORT hash spread the connections) is counted too.
 *
 *   npm run bench:scale -- [--seconds 15] [--clients 8] [--record]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { findPostgresBin, startTestPostgres } from '../../test/helpers/postgres.js';
import { appendResults, environmentLines } from '../results.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '15' }, clients: { type: 'string', default: '8' }, record: { type: 'boolean', default: false } },
});
const SECONDS = Number(values.seconds);
/** Each configuration's SECONDS per path are measured in this many slices, alternating with the others. */
const ROUNDS = 3;
const CLIENTS = Number(values.clients);

interface Kuma {
  baseUrl: URL;
  apiKey: string;
  child: ChildProcess;
}

async function startKuma(dir: string, env: Record<string, string>): Promise<Kuma> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      KUMA_PORT: '0',
      PORT: '0',
      KUMA_HOST: '127.0.0.1',
      KUMA_DB_PATH: path.join(dir, 'kuma.sqlite'),
      KUMA_TMP_DIR: dir,
      KUMA_STUDIO: 'false',
      KUMA_LOG_LEVEL: 'warn',
      KUMA_DEV_BALANCE: '100000000',
      KUMA_RATE_LIMITS: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', () => (/\nTry: .*\n/.test(out) ? resolve() : undefined));
    child.once('exit', (code) => reject(new Error(`kuma exited (${code}): ${out}`)));
  });
  const baseUrl = new URL(`http://127.0.0.1:${/listening on http:\/\/localhost:(\d+)/.exec(out)![1]}`);
  const apiKey = /API key \(shown once, keep it\):\n\n\s+(\S+)/.exec(out)![1]!;
  // Warm: every worker's models loaded (readiness asked on fresh connections, which reach every worker).
  for (let ok = 0; ok < 20;) {
    const { status } = await request(baseUrl, new http.Agent(), 'GET', '/readyz');
    ok = status === 200 ? ok + 1 : 0;
    if (ok === 0) await new Promise((r) => setTimeout(r, 300));
  }
  return { baseUrl, apiKey, child };
}

async function stopKuma(kuma: Kuma): Promise<void> {
  const exited = new Promise((resolve) => kuma.child.once('exit', resolve));
  kuma.child.kill('SIGTERM');
  await exited;
}

function request(
  base: URL,
  agent: http.Agent,
  method: string,
  pathname: string,
  headers: Record<string, string> = {},
  body?: Buffer,
): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: base.hostname, port: base.port, method, path: pathname, agent, headers: body ? { ...headers, 'content-length': String(body.length) } : headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface Scenario {
  name: string;
  build(apiKey: string): { method: string; path: string; headers: Record<string, string>; body: Buffer };
}

function multipart(fields: Record<string, string>, file: Buffer): { headers: Record<string, string>; body: Buffer } {
  const boundary = 'kuma-bench-boundary';
  const parts = Object.entries(fields).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  const head = Buffer.from(
    `${parts.join('')}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="speech.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  );
  return {
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: Buffer.concat([head, file, Buffer.from(`\r\n--${boundary}--\r\n`)]),
  };
}

function scenarios(wav: Buffer): Scenario[] {
  const json = (apiKey: string, path: string, payload: unknown) => ({
    method: 'POST',
    path,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify(payload)),
  });
  return [
    {
      name: 'transcription (2.3 s wav)',
      build: (apiKey) => {
        const { headers, body } = multipart({ model: 'sunjata-1', response_format: 'json' }, wav);
        return { method: 'POST', path: '/openai/v1/audio/transcriptions', headers: { ...headers, authorization: `Bearer ${apiKey}` }, body };
      },
    },
    {
      name: 'speech (wav, 40 chars)',
      build: (apiKey) =>
        json(apiKey, '/openai/v1/audio/speech', {
          model: 'jifili-1',
          input: 'i ni ce, i ka kene wa? n ka kene kosebe.',
          voice: 'alloy',
          response_format: 'wav',
        }),
    },
    {
      name: 'chat translation (short)',
      build: (apiKey) =>
        json(apiKey, '/openai/v1/chat/completions', {
          model: 'banjugu-1',
          messages: [{ role: 'user', content: 'i ni ce' }],
          djelia: { source_language: 'bam_Latn', target_language: 'fra_Latn' },
        }),
    },
  ];
}

interface Outcome {
  requests: number;
  perSecond: number;
  p50: number;
  p95: number;
  failures: number;
  /** Requests answered by each worker process, as shares of the total (sorted, largest first). */
  shares: number[];
  latencies: number[];
  perPid: number[];
}

/** One figure per configuration: the median slice's rate, latencies pooled, work shares summed over slices. */
function mergeSlices(slices: Outcome[]): Outcome {
  const rates = slices.map((o) => o.perSecond).sort((a, b) => a - b);
  const latencies = slices.flatMap((o) => o.latencies).sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  // Shares by rank (largest first) per slice: each slice's clients connect anew, so pids are not comparable.
  const byRank: number[] = [];
  for (const o of slices) [...o.perPid].sort((a, b) => b - a).forEach((n, i) => (byRank[i] = (byRank[i] ?? 0) + n));
  const total = byRank.reduce((a, b) => a + b, 0);
  return {
    requests: latencies.length,
    perSecond: rates[Math.floor(rates.length / 2)]!,
    p50: at(0.5),
    p95: at(0.95),
    failures: slices.reduce((n, o) => n + o.failures, 0),
    shares: byRank.map((n) => n / total),
    latencies,
    perPid: byRank,
  };
}

async function load(kuma: Kuma, seconds: number, scenario: Scenario): Promise<Outcome> {
  const latencies: number[] = [];
  const perPid = new Map<number, number>();
  let failures = 0;
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      // One keep-alive connection per client: the kernel chose its worker when it connected.
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const pid = JSON.parse((await request(kuma.baseUrl, agent, 'GET', '/healthz')).body.toString()).pid as number;
      while (performance.now() < deadline) {
        const { method, path, headers, body } = scenario.build(kuma.apiKey);
        const t0 = performance.now();
        const res = await request(kuma.baseUrl, agent, method, path, headers, body).catch(() => ({ status: 0, body: Buffer.alloc(0) }));
        if (res.status !== 200) {
          if (failures++ === 0) process.stderr.write(`${scenario.name}: first failure ${res.status} ${res.body.toString().slice(0, 300)}\n`);
          continue;
        }
        latencies.push(performance.now() - t0);
        perPid.set(pid, (perPid.get(pid) ?? 0) + 1);
      }
      agent.destroy();
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  const shares = [...perPid.values()].map((n) => n / latencies.length).sort((a, b) => b - a);
  return {
    requests: latencies.length,
    perSecond: latencies.length / seconds,
    p50: at(0.5),
    p95: at(0.95),
    failures,
    shares,
    latencies,
    perPid: [...perPid.values()],
  };
}

const configs: { name: string; env: Record<string, string>; postgres?: boolean }[] = [
  { name: '1 process, SQLite', env: { KUMA_WORKERS: '1' } },
  { name: '2 processes, SQLite', env: { KUMA_WORKERS: '2' } },
  { name: '1 process, PostgreSQL', env: { KUMA_WORKERS: '1' }, postgres: true },
];

const pgBin = findPostgresBin();
if (!pgBin) throw new Error('PostgreSQL binaries not found (apt-get install postgresql, or set KUMA_POSTGRES_BIN)');
const postgres = await startTestPostgres(pgBin);
const results = new Map<string, Map<string, Outcome>>();
// Every configuration runs at once (idle servers cost little) and the measurements alternate between them
// in short slices, ROUNDS times: a background load that comes and goes then weighs on each alike.
const servers: { config: (typeof configs)[number]; kuma: Kuma; dir: string }[] = [];
try {
  for (const config of configs) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kuma-scale-'));
    const env = config.postgres ? { ...config.env, KUMA_DATABASE_URL: await postgres.createDatabase(`scale_${Date.now()}`) } : config.env;
    servers.push({ config, kuma: await startKuma(dir, env), dir });
  }
  const first = servers[0]!.kuma;
  const speech = await request(
    first.baseUrl,
    new http.Agent(),
    'POST',
    '/openai/v1/audio/speech',
    { authorization: `Bearer ${first.apiKey}`, 'content-type': 'application/json' },
    Buffer.from(JSON.stringify({ model: 'jifili-1', input: 'i ni ce, i ka kene wa? n ka kene kosebe.', voice: 'alloy', response_format: 'wav' })),
  );
  if (speech.status !== 200) throw new Error(`speech for the upload failed: ${speech.status}`);
  for (const scenario of scenarios(speech.body)) {
    for (const { kuma } of servers) await load(kuma, SECONDS / ROUNDS, { ...scenario, name: 'warm-up' }).catch(() => undefined);
    const slices = new Map<string, Outcome[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const { config, kuma } of servers) {
        const outcome = await load(kuma, SECONDS / ROUNDS, scenario);
        slices.set(config.name, [...(slices.get(config.name) ?? []), outcome]);
      }
    }
    for (const { config } of servers) {
      const merged = mergeSlices(slices.get(config.name)!);
      if (!results.has(config.name)) results.set(config.name, new Map());
      results.get(config.name)!.set(scenario.name, merged);
      process.stdout.write(
        `${config.name} · ${scenario.name}: ${merged.perSecond.toFixed(1)} req/s (median of ${ROUNDS} slices), p50 ${merged.p50.toFixed(0)} ms, p95 ${merged.p95.toFixed(0)} ms, failures ${merged.failures}, shares ${merged.shares.map((x) => (x * 100).toFixed(0) + '%').join('/')}\n`,
      );
    }
  }
} finally {
  for (const { kuma, dir } of servers) {
    await stopKuma(kuma);
    rmSync(dir, { recursive: true, force: true });
  }
  await postgres.stop();
}

const names = scenarios(Buffer.alloc(0)).map((s) => s.name);
const row = (config: string, scenario: string) => results.get(config)!.get(scenario)!;
const lines = [
  '',
  `## Scale: 1 vs 2 processes (KUMA_WORKERS), SQLite vs PostgreSQL — ${new Date().toISOString().slice(0, 10)}`,
  '',
  ...environmentLines(),
  `- Command: \`npm run bench:scale -- --seconds ${SECONDS} --clients ${CLIENTS} --record\` (${CLIENTS} closed-loop clients, each on its own keep-alive connection; the three server trees run side by side and each path is measured in ${ROUNDS} slices of ${(SECONDS / ROUNDS).toFixed(1)} s per configuration, alternating, after a warm-up slice each; req/s is the median slice; the load generator runs on the same 2 cores)`,
  '',
  '| configuration | path | req/s | p50 ms | p95 ms | failures | work per worker |',
  '|---|---|---:|---:|---:|---:|---|',
  ...configs.flatMap((c) =>
    names.map((s) => {
      const o = row(c.name, s);
      return `| ${c.name} | ${s} | ${o.perSecond.toFixed(1)} | ${o.p50.toFixed(0)} | ${o.p95.toFixed(0)} | ${o.failures} | ${o.shares.map((x) => (x * 100).toFixed(0) + ' %').join(' / ')} |`;
    }),
  ),
  '',
  'Ratios in this run:',
  ...names.map(
    (s) =>
      `- ${s}: 2 processes / 1 process = ${(row('2 processes, SQLite', s).perSecond / row('1 process, SQLite', s).perSecond).toFixed(2)}× throughput; PostgreSQL / SQLite = ${(row('1 process, PostgreSQL', s).perSecond / row('1 process, SQLite', s).perSecond).toFixed(2)}× throughput, p50 ${(row('1 process, PostgreSQL', s).p50 - row('1 process, SQLite', s).p50).toFixed(1)} ms apart`,
  ),
];
if (values.record) appendResults(lines.join('\n') + '\n');
else process.stdout.write(lines.join('\n') + '\n');
