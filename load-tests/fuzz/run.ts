/**
 * `npm run fuzz`: the standing fuzz suite (issue 16). Targets: JSON bodies, multipart bodies, raw HTTP and
 * the WebSocket routes — realtime sessions, the speech socket, the carrier streams, and carrier streams with no
 * token (ws-preauth) — and request smuggling (smuggling-target.ts) (against a Kuma process
 * with the demo models, rate limits off, native surface served) and each upload decoder (through the
 * DecoderPool, see decoder-targets.ts). Per case: a 2xx, or a 4xx with the surface's error shape, or a 503
 * with Retry-After (overload, counted apart), or for a socket an answer or a documented close; never another
 * 5xx, a close 1011, a server_error event, an error-level log line, a hang (per-case timeout) or a dead
 * server (outcomes.ts has the rules). Resident memory of the server and of the decoder processes is sampled
 * and must stay under RSS_BOUND_MB.
 *
 *   npm run fuzz                          # every target, 100,000 cases each, a random seed (printed)
 *   npm run fuzz -- --seed 7 --cases 2000 # seeded, shorter
 *   npm run fuzz -- --resume              # continue the run saved in the state file
 *   npm run fuzz -- --targets json,decode-mp4 --no-write
 *   npm run fuzz -- --seed 7 --replay multipart:1234   # one case again, printed with its outcome
 *
 * State (--state, default load-tests/fuzz/state.json, git-ignored) is saved after every batch; --resume
 * continues where it stopped with the same seed and counts. The full run writes a `## fuzz` section to
 * load-tests/RESULTS.md. Exit code 1 when any case failed or the memory bound was passed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DecoderPool } from '../../src/codecs/decode/decoder-pool.js';
import { recordSection } from '../results.js';
import { RssSampler, runCases, startFuzzServer, type CaseRunner, type FuzzServer } from './harness.js';
import type { HttpContext } from './http-targets.js';
import { emptyTally, failuresIn, type OutcomeKind, type Tally } from './outcomes.js';
import { caseRng } from './rng.js';
import { ALL_TARGETS, decoderRunner, isServerTarget, makeSeeds, serverContext, serverRunner } from './targets.js';

/** The server's resident memory with the demo models is ≈ 0.5–0.9 GB; hostile input must not add more than this. */
const RSS_BOUND_MB = 1536;
/** Each decoder process may use 512 MB plus twice its uploads (decoder-pool.ts); two of them, with slack. */
const DECODER_RSS_BOUND_MB = 2 * 700;
const CASE_TIMEOUT_MS = 30_000;

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    cases: { type: 'string', default: '100000' },
    targets: { type: 'string', default: ALL_TARGETS.join(',') },
    resume: { type: 'boolean', default: false },
    state: { type: 'string', default: path.resolve('load-tests/fuzz/state.json') },
    concurrency: { type: 'string', default: '8' },
    replay: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});

interface TargetState {
  next: number;
  tally: Tally;
  peakServerMb: number;
  peakDecodersMb: number;
  seconds: number;
}
interface State {
  seed: number;
  cases: number;
  targets: string[];
  byTarget: Record<string, TargetState>;
}

function loadState(): State {
  if (values.resume) {
    const state = JSON.parse(fs.readFileSync(values.state!, 'utf8')) as State;
    console.log(`resuming ${values.state}: seed ${state.seed}, ${state.cases} cases per target`);
    return state;
  }
  const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
  const targets = values.targets!.split(',').filter(Boolean);
  for (const t of targets) if (!ALL_TARGETS.includes(t)) throw new Error(`unknown target ${t}; targets: ${ALL_TARGETS.join(', ')}`);
  return { seed, cases: Number(values.cases), targets, byTarget: {} };
}

const state = loadState();
const save = () => fs.writeFileSync(values.state!, JSON.stringify(state, null, 1));
console.log(`fuzz: seed ${state.seed}, ${state.cases} cases per target, targets ${state.targets.join(', ')}`);

const seeds = await makeSeeds();
let server: FuzzServer | undefined;
const ensureServer = async () => (server ??= await startFuzzServer());
const ctx = (): HttpContext => serverContext(server!, seeds, CASE_TIMEOUT_MS);
// A short decode timeout, so that a decoder that spins shows up as a (400) timeout quickly rather than stalling lanes.
const pool = new DecoderPool({ size: 2, timeoutMs: 10_000, streamsPerWorker: 16 });

function runnerFor(name: string): CaseRunner<unknown> {
  return isServerTarget(name) ? serverRunner(name, ctx) : (decoderRunner(name, pool, seeds, CASE_TIMEOUT_MS) as CaseRunner<unknown>);
}

if (values.replay) {
  const [name, index] = values.replay.split(':');
  if (isServerTarget(name!)) await ensureServer();
  const runner = runnerFor(name!);
  const input = runner.generate(caseRng(state.seed, name!, Number(index)));
  console.log(runner.describe(input));
  console.log(await runner.execute(input));
  await server?.stop();
  await pool.close();
  process.exit(0);
}

for (const name of state.targets) {
  const t = (state.byTarget[name] ??= { next: 0, tally: emptyTally(), peakServerMb: 0, peakDecodersMb: 0, seconds: 0 });
  if (t.next >= state.cases) continue;
  const http = isServerTarget(name);
  if (http) await ensureServer();
  const sampler = new RssSampler();
  const serverPid = () => server?.process.pid;
  if (http) sampler.start(serverPid);
  else
    sampler.start(
      () => process.pid,
      () => (serverPid() ? [serverPid()!] : []),
    );
  const began = performance.now();
  const secondsBefore = t.seconds; // a resumed run adds to what the earlier ones took
  let lastPrint = 0;
  const outcome = await runCases(runnerFor(name), t.tally, {
    seed: state.seed,
    from: t.next,
    to: state.cases,
    concurrency: Number(values.concurrency),
    batch: 500,
    alive: http ? () => server!.alive() : async () => true,
    errorsLogged: () => server?.takeErrorLines() ?? [],
    onBatch: (next) => {
      t.next = next;
      t.seconds = secondsBefore + (performance.now() - began) / 1000;
      t.peakServerMb = Math.max(t.peakServerMb, http ? sampler.peakMb : 0);
      t.peakDecodersMb = Math.max(t.peakDecodersMb, sampler.peakChildrenMb);
      save();
      if (performance.now() - lastPrint > 10_000 || next >= state.cases) {
        lastPrint = performance.now();
        console.log(
          `${name}: ${next}/${state.cases} ${JSON.stringify(t.tally.outcomes)} server ${t.peakServerMb.toFixed(0)} MB, decoders ${t.peakDecodersMb.toFixed(0)} MB`,
        );
      }
    },
  });
  sampler.stop();
  t.seconds = secondsBefore + (performance.now() - began) / 1000;
  save();
  if (outcome === 'death') {
    console.log(`${name}: the server died; restarting it for the remaining targets`);
    await server?.stop();
    server = undefined;
  }
}
await server?.stop();
await pool.close();

// ---------------------------------------------------------------- report
let failed = 0;
const rows = state.targets.map((name) => {
  const t = state.byTarget[name]!;
  const o = t.tally.outcomes;
  const f = failuresIn(t.tally);
  failed += f;
  const over = t.peakServerMb > RSS_BOUND_MB || t.peakDecodersMb > DECODER_RSS_BOUND_MB;
  if (over) failed++;
  const n = (...kinds: OutcomeKind[]) => kinds.reduce((sum, k) => sum + (o[k] ?? 0), 0);
  return `| ${name} | ${t.tally.cases} | ${n('2xx')} | ${n('4xx')} | ${n('503')} | ${n('closed', 'refused', 'ws-dropped')} | ${n('ws-answered')} | ${n('ws-closed')} | ${n('5xx')} | ${n('bad-envelope', 'no-answer')} | ${n('ws-1011', 'ws-server-error', 'ws-bad-close', 'ws-bad-event')} | ${n('smuggled')} | ${n('error-logged')} | ${n('hang')} | ${n('death')} | ${t.peakServerMb ? t.peakServerMb.toFixed(0) : '–'} | ${t.peakDecodersMb.toFixed(0)}${over ? ' (over)' : ''} | ${t.seconds.toFixed(0)} |`;
});
for (const name of state.targets)
  for (const f of state.byTarget[name]!.tally.findings)
    console.log(`FINDING ${name}:${f.index} ${f.kind} ${f.status ?? ''} ${f.detail ?? ''}\n    ${f.input ?? ''}`);
recordSection(
  'fuzz',
  [
    `Seed ${state.seed}; ${state.cases} cases per target; replay one with \`npm run fuzz -- --seed ${state.seed} --replay <target>:<index>\``,
    'Pass: 2xx, 4xx with the error envelope (native paths /v1, /v2, /api/…: `{detail: string | entries[]}`), 503 with Retry-After (overload), raw HTTP closed without an answer or refused by the uWS parser (400/431/505 in its own HTML, before any route). Failure: other 5xx, a 4xx without its error shape or no answer (bad env.), a hang (30 s per case), a death, a line the server logged at level error',
    'smuggling: raw HTTP with repeated or conflicting Content-Length / Transfer-Encoding and a request hidden behind it (same packet or later). Pass: one 400 then the server closes, or a close without answer; controls (one plain length, a pipelined request) get both answers (2xx). Failure (smuggled): a second answer, the ambiguous request served, or the connection left open',
    'ws-preauth: carrier streams with no token from 127.0.0.2–5: messages announced over the 128 KiB bound, fragments past it, 64–128 KiB messages, 1–8 pings (each answered) or a flood, a slow or missing start, up to 24 sockets at once. Pass: upgrade refused 429/503 (the caps), a documented close, a drop where the case sent what is dropped; failure: another close or drop, an unanswered ping, no close',
    'WebSocket cases end with a probe the server must answer (realtime: an unknown event, answered by an `error` naming its event_id; speech socket: a character no voice says, refused by name; carriers: `stop` or a frame that is not the protocol, answered by a close). Pass: the probe answered (ws answered), or a documented close (1000, 1001, 1008, 1009, 1013, 4xxx; 1011 app_unreachable on a carrier), or uWS dropping a connection that sent text that is not UTF-8; an upgrade refused is classified as HTTP. Failure: close 1011, an error event or message saying server_error, another close code, a server message not of the protocol (ws fail.), no answer and no close (hang)',
    `Bounds: server resident memory ≤ ${RSS_BOUND_MB} MB, decoder processes together ≤ ${DECODER_RSS_BOUND_MB} MB. Decoder targets run through the DecoderPool (2 processes) in the fuzz process, errors classified with toApiError`,
  ],
  [
    '| target | cases | 2xx | 4xx | 503 | closed / refused / dropped by uWS | ws answered | ws closed | 5xx | bad env. | ws fail. | smuggled | error logs | hangs | deaths | peak server MB | peak decoders MB | s |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ],
  !values['no-write'],
);
process.exit(failed ? 1 : 0);
