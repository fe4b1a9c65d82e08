/**
 * CPU profile of one http-baseline server under load (`npm run bench:http:profile -- --server kuma`):
 * starts the server with `node --cpu-prof` over a prepared store (the same account, key and limits as
 * bench:http), loads `GET /compat/v1/models` with autocannon, stops it, and prints the functions with the
 * most self time and the share of the profile per source area (src/transport, src/api, pino, …).
 *
 * Flags: --server kuma|node (kuma)  --duration S (8)  --connections N (50)  --top N (30)
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { generateApiKey, hashApiKey } from '../../src/auth/api-keys.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const { values } = parseArgs({
  options: {
    server: { type: 'string', default: 'kuma' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '50' },
    top: { type: 'string', default: '30' },
  },
});
const script = path.join(HERE, values.server === 'node' ? 'serve-node-http.ts' : 'serve-kuma.ts');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-prof-'));
const dbPath = path.join(dir, 'bench.sqlite');

const store = await openSqliteStore(dbPath);
const account = await store.createAccount('bench', 10_000_000);
const apiKey = generateApiKey();
await store.createKey(account.id, hashApiKey(apiKey), 'bench');
// As in run.ts; a store from before the limits (no setRateLimits) is used as it is.
await (store as { setRateLimits?: (id: string, l: object) => Promise<unknown> }).setRateLimits?.(account.id, {
  requestsPerMinute: 1_000_000_000,
  tokensPerMinute: 0,
  concurrent: 0,
});
await store.close();

const proc = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', 'tsx', script, dbPath, dir], {
  cwd: ROOT,
  stdio: ['pipe', 'pipe', 'inherit'],
});
const port = await new Promise<number>((resolve, reject) => {
  proc.once('exit', (code) => reject(new Error(`server exited (${code})`)));
  readline.createInterface({ input: proc.stdout! }).once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
});
const run = (duration: number) =>
  autocannon({
    url: `http://127.0.0.1:${port}/compat/v1/models`,
    headers: { authorization: `Bearer ${apiKey}` },
    connections: Number(values.connections),
    duration,
  });
await run(2); // warm-up: let the JIT settle before what we read
const result = await run(Number(values.duration));
proc.kill('SIGTERM');
await new Promise((resolve) => proc.once('exit', resolve));
if (result.non2xx > 0) console.log(`warning: ${result.non2xx} non-2xx responses`);

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error('no .cpuprofile written');
const profile = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const byFunction = new Map<string, number>();
const byArea = new Map<string, number>();
const area = (url: string) => {
  const rel = url.replace(/^file:\/\//, '').replace(ROOT + '/', '');
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(rel);
  if (m) return m[1]!;
  if (rel.startsWith('src/')) return rel.split('/').slice(0, 2).join('/');
  if (rel.startsWith('node:') || rel === '') return 'node internals / native';
  return rel.split('/').slice(0, 2).join('/');
};
// Idle time is the event loop waiting: not work, so not part of any share below.
const idleIds = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
const busy = total - [...idleIds].reduce((sum, id) => sum + (selfUs.get(id) ?? 0), 0);
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0;
  if (!us || idleIds.has(node.id)) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url ? `${url.replace(/^file:\/\//, '').replace(ROOT + '/', '')}:${lineNumber + 1}` : '';
  const name = `${functionName || '(anonymous)'} ${where}`.trim();
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  byArea.set(area(url), (byArea.get(area(url)) ?? 0) + us);
}
const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
const requests = result.requests.total;
console.log(
  `${values.server}: ${Math.round(requests / result.duration)} req/s over ${result.duration} s; busy ${Math.round(busy / 1000)} ms of the profile's ${Math.round(total / 1000)} ms (start-up and warm-up included); shares below are of the busy time`,
);
console.log('\nSelf time by area:');
for (const [name, us] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${pct(us)}  ${name}`);
console.log(`\nTop ${values.top} functions by self time:`);
for (const [name, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) console.log(`  ${pct(us)}  ${name}`);
fs.rmSync(dir, { recursive: true, force: true });
