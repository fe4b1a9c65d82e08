/**
 * Child-process entry for the http-baseline benchmark: the real Kuma server (startKuma, uWebSockets.js
 * transport) on an ephemeral port over the SQLite file the orchestrator prepared. Prints one JSON line
 * `{"port":N,"pid":N}` on stdout once listening; everything after that on stdout is pino output (warn and
 * above; the access log goes to /dev/null, see bench-log.ts), which the orchestrator collects and reports as problems seen under load.
 *
 * Usage (from run.ts): node --import tsx serve-kuma.ts <dbPath> <tmpDir>
 */
import { fstatSync } from 'node:fs';
import { loadConfig } from '../../src/config/config.js';
import { startKuma } from '../../src/server.js';
import { BENCH_LOG_LEVEL, benchLogDestination } from './bench-log.js';

const [dbPath, tmpDir] = process.argv.slice(2);
if (!dbPath || !tmpDir) {
  process.stderr.write('usage: serve-kuma.ts <dbPath> <tmpDir>\n');
  process.exit(2);
}

// An empty environment: a KUMA_* variable in the caller's shell must not change what is measured.
// The access log is on (bench-log.ts: written, to /dev/null), as it is on the node:http baseline.
const config = loadConfig({}, { host: '127.0.0.1', port: 0, dbPath, tmpDir, logLevel: BENCH_LOG_LEVEL, shutdownGraceMs: 1000, modelsManifest: '' });
const server = await startKuma({ config, logDestination: benchLogDestination() });
process.stdout.write(`${JSON.stringify({ port: server.port, pid: process.pid })}\n`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// The orchestrator holds our stdin open; if it dies without cleaning up (even SIGKILL), stdin closes and
// we go too, so no server is left orphaned on the machine.
// Only when stdin is a pipe (run.ts spawns us so): started by hand from a shell, stdin may be /dev/null.
const stdinStat = fstatSync(0);
if (stdinStat.isFIFO() || stdinStat.isSocket()) {
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.stdin.resume();
}
