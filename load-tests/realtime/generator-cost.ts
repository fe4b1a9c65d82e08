/**
 * What load-tests/realtime's generator costs per frame with each WebSocket client (session-sockets.ts):
 * the session worker, unchanged, streams N sessions of 20 ms append frames at real-time pace to a sink
 * (sink-server.ts, its own process, which parses nothing), and this process's CPU (the worker thread, this
 * thread, GC) is divided by the frames sent over the measured window. Rounds alternate raw, ws, raw, ws…
 * so that both see the same machine; the figure per client is the median of its rounds, compared as ws / raw.
 *
 * Run: `npm run bench:realtime:generator [-- --sessions 500 --seconds 10 --rounds 2 --no-write]`.
 */
import { fork } from 'node:child_process';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { spawnWorker } from '../../src/threads/spawn-worker.js';
import { percentile, recordSection } from '../results.js';
import { CLIENT_KINDS, type ClientKind } from './session-sockets.js';
import type { WorkerInput, WorkerReport } from './session-worker.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '2' },
    'no-write': { type: 'boolean', default: false },
  },
});
const SESSIONS = Number(values.sessions);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);

// A cycle of distinct frames the size of run.ts's (20 ms of pcm16 at 24 kHz = 960 bytes, base64 in JSON):
// the cost of a send depends on its size, not on what the audio says.
const frames = Array.from({ length: 100 }, () =>
  JSON.stringify({
    type: 'input_audio_buffer.append',
    audio: Buffer.from(Array.from({ length: 960 }, () => Math.floor(Math.random() * 256))).toString('base64'),
  }),
);

const sink = fork(new URL('./sink-server.ts', import.meta.url), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
const { port } = await new Promise<{ port: number }>((resolve) =>
  readline.createInterface({ input: sink.stdout! }).once('line', (line) => resolve(JSON.parse(line))),
);
const sinkBytes = () =>
  new Promise<number>((resolve) => {
    sink.once('message', (m: { bytes: number }) => resolve(m.bytes));
    sink.send('bytes?');
  });

interface Round {
  client: ClientKind;
  usPerFrame: number;
  /** The kernel's share of that CPU (a loopback send does the receiving side's TCP work too). */
  systemShare: number;
  cores: number;
  framesPerSecond: number;
  /** Frames sent over 40 ms after due during the window (the generator's own lag). */
  late: number;
  /** Bytes the sink received during the window ÷ bytes of the frames sent in it: 1.00 when nothing is held back. */
  delivered: number;
}

async function round(client: ClientKind): Promise<Round> {
  const data: WorkerInput = {
    url: `ws://127.0.0.1:${port}/`,
    apiKey: 'unused',
    sessions: SESSIONS,
    setup: '{"type":"session.update"}',
    frames,
    speechStartFrame: 0,
    text: '',
    staggerMs: 1000,
    client,
  };
  const worker = spawnWorker(new URL(`./session-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url), { workerData: data });
  const ask = <T>(message: string) =>
    new Promise<T>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.postMessage(message);
    });
  const ready = await ask<{ ready: number; framesSent: number }>('ready?');
  // One second more for the staggered starts to be all streaming before the window opens.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const counts = await ask<{ framesSent: number; framesLate: number }>('ready?');
  const before = { frames: counts.framesSent, late: counts.framesLate, cpu: process.cpuUsage(), bytes: await sinkBytes(), at: performance.now() };
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  const cpu = process.cpuUsage(before.cpu);
  const seconds = (performance.now() - before.at) / 1000;
  const bytes = (await sinkBytes()) - before.bytes;
  const report = await ask<WorkerReport>('stop');
  await worker.terminate();
  const frameBytes = Buffer.byteLength(frames[0]!) + 8; // 2-byte head, 16-bit length, 4-byte mask
  const sent = report.framesSent - before.frames;
  if (ready.ready !== SESSIONS || report.errors.length) throw new Error(`${client}: ${ready.ready}/${SESSIONS} connected; ${report.errors.join('; ')}`);
  return {
    client,
    usPerFrame: (cpu.user + cpu.system) / sent,
    systemShare: cpu.system / (cpu.user + cpu.system),
    cores: (cpu.user + cpu.system) / 1e6 / seconds,
    framesPerSecond: sent / seconds,
    late: report.framesLate - before.late,
    delivered: bytes / (sent * frameBytes),
  };
}

const rounds: Round[] = [];
for (let i = 0; i < ROUNDS; i++) {
  for (const client of CLIENT_KINDS) {
    rounds.push(await round(client));
    const r = rounds.at(-1)!;
    process.stderr.write(
      `${r.client}: ${r.usPerFrame.toFixed(2)} µs/frame (${(100 * r.systemShare).toFixed(0)} % system), ${r.cores.toFixed(2)} cores, ${r.framesPerSecond.toFixed(0)} frames/s, ${r.late} late, delivered ${r.delivered.toFixed(3)}\n`,
    );
  }
}
sink.disconnect();

const median = (client: ClientKind, key: 'usPerFrame' | 'cores' | 'framesPerSecond') =>
  percentile(
    rounds.filter((r) => r.client === client).map((r) => r[key]),
    50,
  );
const rows = [
  '| client | µs CPU / frame (median) | generator CPU (cores) | frames/s | rounds: µs / frame (system share) | frames late in the windows |',
  '|---|---:|---:|---:|---|---:|',
];
for (const client of CLIENT_KINDS) {
  const mine = rounds.filter((r) => r.client === client);
  rows.push(
    `| ${client} | ${median(client, 'usPerFrame').toFixed(2)} | ${median(client, 'cores').toFixed(2)} | ${median(client, 'framesPerSecond').toFixed(0)} | ${mine.map((r) => `${r.usPerFrame.toFixed(2)} (${(100 * r.systemShare).toFixed(0)} %)`).join(', ')} | ${mine.reduce((n, r) => n + r.late, 0)} |`,
  );
}
rows.push(`| ws / raw | ${(median('ws', 'usPerFrame') / median('raw', 'usPerFrame')).toFixed(2)} | | | | |`);
recordSection(
  'realtime generator',
  [
    `The session worker of load-tests/realtime streaming ${SESSIONS} sessions of 20 ms append frames (${Buffer.byteLength(frames[0]!)}-byte JSON, as pcm16 24 kHz) at real-time pace to a sink that parses nothing (sink-server.ts, its own process), ${ROUNDS} rounds per client alternating, ${SECONDS} s measured per round after every session streams.`,
    "CPU = this process (the worker thread, the orchestrating thread, GC) over the window ÷ frames sent in it; the sink is not counted. The ws/raw ratio is the comparison: absolute figures move with the machine's load.",
    `Bytes the sink received ÷ bytes of the frames sent, per round: ${rounds.map((r) => `${r.client} ${r.delivered.toFixed(3)}`).join(', ')}.`,
  ],
  rows,
  !values['no-write'],
);
process.exit(0);
