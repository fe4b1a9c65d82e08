/**
 * SIGKILL billing test (issue P12, points 6 and 7): is every usage row delivered work, and is delivered work
 * charged, when the server is killed under mixed load? One Kuma process with the demo models and a SQLite
 * file that outlives it; REST clients (transcription, chat JSON and SSE, speech), realtime sessions and
 * speech sockets (clients.ts) run against it, and at a random moment it is killed with SIGKILL, then started
 * again on the same file — `--kills` times. Then the rows are read from the file and compared with what the
 * clients received (ledger.ts).
 *
 * PASS requires, over every kill: no row for work a client did not receive in full (nor for a request it
 * never got an answer to); every row's quantity as the answer reported it; and work received but not charged
 * only where charging after delivery allows it — a REST answer or realtime item delivered within
 * LOSS_WINDOW_MS of the kill, the last phrase of a speech socket open at the kill.
 *
 *   npm run bench:kill                         # 5 kills, 8 s of load each; records a section in RESULTS.md
 *   npm run bench:kill -- --kills 5 --duration 4 --no-write
 *   flags: --kills N (5) --duration S (8) --rest N (6) --realtime N (2) --sockets N (2) --seed N (7) --no-write
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { seededRandom } from '../../test/helpers/seeded-random.js';
import { startServerProcess } from '../../test/helpers/server-process.js';
import { recordSection } from '../results.js';
import { realtimeLoop, restLoop, speechSocketLoop, type Records } from './clients.js';
import { compareEpoch, LOSS_WINDOW_MS, readRows, unexplained, type EpochReport, type SurfaceTally } from './ledger.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '5' },
    duration: { type: 'string', default: '8' },
    rest: { type: 'string', default: '6' },
    realtime: { type: 'string', default: '2' },
    sockets: { type: 'string', default: '2' },
    seed: { type: 'string', default: '7' },
    'no-write': { type: 'boolean', default: false },
  },
});
const KILLS = Number(values.kills);
const DURATION_MS = Number(values.duration) * 1000;
const random = seededRandom(Number(values.seed));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-kill-'));
const dbPath = path.join(dir, 'kuma.sqlite');
const env = { KUMA_DB_PATH: dbPath, KUMA_TMP_DIR: dir, KUMA_STUDIO: 'false', KUMA_RATE_LIMITS: 'off' };

const epochs: Array<{ records: Records; killedAt: number; killAfterMs: number }> = [];
for (let epoch = 1; epoch <= KILLS; epoch++) {
  const server = await startServerProcess(env);
  const records: Records = { rest: [], realtime: [], sockets: [] };
  const loops = [
    ...Array.from({ length: Number(values.rest) }, (_, i) => restLoop(server.baseUrl, server.apiKey, i, records.rest)),
    ...Array.from({ length: Number(values.realtime) }, () => realtimeLoop(server.baseUrl, server.apiKey, records.realtime)),
    ...Array.from({ length: Number(values.sockets) }, () => speechSocketLoop(server.baseUrl, server.apiKey, records.sockets)),
  ];
  // Killed somewhere in the second half of the load, never at a chosen moment.
  const killAfterMs = Math.round(DURATION_MS * (0.5 + random() * 0.5));
  await new Promise((r) => setTimeout(r, killAfterMs));
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  const killedAt = performance.now();
  server.child.kill('SIGKILL');
  await exited;
  await Promise.all(loops);
  epochs.push({ records, killedAt, killAfterMs });
  process.stdout.write(`kill ${epoch}/${KILLS} after ${(killAfterMs / 1000).toFixed(1)} s of load\n`);
}

const rows = readRows(dbPath);
const reports: EpochReport[] = epochs.map((e) => compareEpoch(e.records, e.killedAt, rows));
const unknown = unexplained(rows);
fs.rmSync(dir, { recursive: true, force: true });

const sum = (pick: (r: EpochReport) => SurfaceTally): SurfaceTally =>
  reports.map(pick).reduce((a, b) => ({
    delivered: a.delivered + b.delivered,
    rows: a.rows + b.rows,
    chargedNotDelivered: a.chargedNotDelivered + b.chargedNotDelivered,
    deliveredNotCharged: a.deliveredNotCharged + b.deliveredNotCharged,
    lostOutsideWindow: a.lostOutsideWindow + b.lostOutsideWindow,
    wrongQuantity: a.wrongQuantity + b.wrongQuantity,
  }));
const cells = (t: SurfaceTally) => `${t.delivered} | ${t.rows} | ${t.chargedNotDelivered} | ${t.deliveredNotCharged} | ${t.wrongQuantity}`;
const table = [
  '| kill | after | REST delivered | rows | charged, not delivered | delivered, not charged | wrong qty | realtime items | rows | charged, not delivered | delivered, not charged | wrong qty | socket phrases | rows | charged, not delivered | delivered, not charged | wrong qty |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...reports.map((r, i) => `| ${i + 1} | ${(epochs[i]!.killAfterMs / 1000).toFixed(1)} s | ${cells(r.rest)} | ${cells(r.realtime)} | ${cells(r.sockets)} |`),
  `| all | | ${cells(sum((r) => r.rest))} | ${cells(sum((r) => r.realtime))} | ${cells(sum((r) => r.sockets))} |`,
];
const totals = [sum((r) => r.rest), sum((r) => r.realtime), sum((r) => r.sockets)];
const failures = [
  ...totals.flatMap((t, i) => {
    const name = ['REST', 'realtime', 'speech socket'][i];
    return [
      t.chargedNotDelivered ? `${name}: ${t.chargedNotDelivered} rows for work not delivered` : '',
      t.wrongQuantity ? `${name}: ${t.wrongQuantity} rows with a quantity other than the answer's` : '',
      t.lostOutsideWindow ? `${name}: ${t.lostOutsideWindow} delivered units not charged outside the kill's window` : '',
    ];
  }),
  unknown ? `${unknown} rows for requests no client got an answer to` : '',
].filter(Boolean);
const pass = failures.length === 0;

recordSection(
  'SIGKILL billing: usage rows against delivered work (`npm run bench:kill`)',
  [
    `Parameters: ${KILLS} kills, ${DURATION_MS / 1000} s of load per server life (killed at a seeded random moment in its second half, seed ${values.seed}); ${values.rest} REST clients (transcription, chat JSON and SSE, speech), ${values.realtime} realtime sessions (manual commits, ≈ 2× real time), ${values.sockets} speech sockets (16 kHz PCM); one SQLite file across restarts.`,
    `Delivered: REST, status 200 and the whole body; realtime, the item's completed event received; speech socket, all of a phrase's audio received. "Delivered, not charged" is allowed only within ${LOSS_WINDOW_MS} ms before a kill (REST, realtime) or for the phrase in flight at the kill (speech socket).`,
    `Rows no client explained (charged, nothing received): ${unknown}.`,
    `Result: ${pass ? 'PASS' : `FAIL — ${failures.join('; ')}`}`,
  ],
  table,
  !values['no-write'],
);
process.exitCode = pass ? 0 : 1;
