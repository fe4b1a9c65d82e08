/**
 * The server under test for the model load tests (asr, tts): Kuma with the demo models, from a manifest given on the
 * command line, as its own process. Prints `{port, apiKey, otherApiKey, pid}` once every model is loaded
 * (otherApiKey belongs to a second account, for scenarios where two users compete).
 */
import { loadConfig } from '../src/config/config.js';
import { startKuma } from '../src/server.js';
import { generateApiKey, hashApiKey } from '../src/auth/api-keys.js';

/**
 * Only the realtime, telephony and engine settings come from the environment (the load tests set them); everything else
 * is fixed here. KUMA_OUTBOUND_ALLOW lets the telephony test's relay app on 127.0.0.1 be dialled.
 */
const PASSED_ENV_PREFIXES = ['KUMA_REALTIME_', 'KUMA_WS_', 'KUMA_TELEPHONY_', 'KUMA_ENGINE_'];
function realtimeEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => name === 'KUMA_OUTBOUND_ALLOW' || PASSED_ENV_PREFIXES.some((prefix) => name.startsWith(prefix))),
  );
}

const [dbPath, manifest] = process.argv.slice(2);
if (!dbPath || !manifest) {
  process.stderr.write('usage: serve.ts <dbPath> <manifest>\n');
  process.exit(2);
}
const config = loadConfig(realtimeEnv(), {
  host: '127.0.0.1',
  port: 0,
  dbPath,
  modelsManifest: manifest,
  demoPack: false,
  logLevel: 'warn',
  rateLimits: false,
  ...(process.env.KUMA_ENCODER_THREADS ? { encoderThreads: Number(process.env.KUMA_ENCODER_THREADS) } : {}),
  ...(process.env.KUMA_ENGINE_NICENESS ? { engineNiceness: Number(process.env.KUMA_ENGINE_NICENESS) } : {}),
});
const server = await startKuma({ config });
await server.enginesReady;
const account = await server.store.createAccount('load', 1_000_000_000_000);
const apiKey = generateApiKey();
await server.store.createKey(account.id, hashApiKey(apiKey), 'load');
const other = await server.store.createAccount('load-other', 1_000_000_000_000);
const otherApiKey = generateApiKey();
await server.store.createKey(other.id, hashApiKey(otherApiKey), 'load-other');
process.stdout.write(JSON.stringify({ port: server.port, apiKey, otherApiKey, pid: process.pid }) + '\n');
// Exit with the orchestrator: its end of stdin closes when it stops, however it stops.
process.stdin.on('end', () => void server.close().then(() => process.exit(0)));
process.stdin.resume();
// KUMA_BENCH_GC=1: the server's garbage-collection pauses, summed by kind and the longest, on stderr every 10 s.
if (process.env.KUMA_BENCH_GC) {
  const { PerformanceObserver } = await import('node:perf_hooks');
  const byKind = new Map<number, { count: number; ms: number; max: number }>();
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      const k = byKind.get(kind) ?? { count: 0, ms: 0, max: 0 };
      (k.count++, (k.ms += entry.duration), (k.max = Math.max(k.max, entry.duration)));
      byKind.set(kind, k);
    }
  }).observe({ entryTypes: ['gc'] });
  setInterval(() => {
    process.stderr.write(
      `gc ${JSON.stringify(Object.fromEntries([...byKind].map(([k, v]) => [k, { count: v.count, ms: Math.round(v.ms), max: Math.round(v.max) }])))}\n`,
    );
    byKind.clear();
  }, 10_000).unref();
}
