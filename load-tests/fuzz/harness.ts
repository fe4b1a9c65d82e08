/**
 * Runs a fuzz target's cases [from, to) in batches with bounded concurrency, each case generated from its
 * own seed (rng.ts), and tallies the outcomes (outcomes.ts). Between batches the caller saves its state,
 * so a run stopped at any point resumes at the last saved batch; the server process is checked after
 * every batch (still alive, /healthz answering) and a death ends the target's run there.
 * Lines the server logged at level error or above during a batch are counted as `error-logged` findings.
 * Also: the server process (with its decoder children) started for the server targets, and the sampler of
 * resident memory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { startServerProcess, type ServerProcess } from '../../test/helpers/server-process.js';
import { FAILURES, type Outcome, type Tally } from './outcomes.js';
import { caseRng, type Rng } from './rng.js';

export interface CaseRunner<I> {
  name: string;
  generate(rng: Rng): I;
  execute(input: I): Promise<Outcome>;
  describe(input: I): string;
}

export interface BatchOptions {
  seed: number;
  from: number;
  to: number;
  concurrency: number;
  batch: number;
  /** Called after each batch with the next case index; the place to save state and print progress. */
  onBatch(next: number): void;
  /** Says whether the server is still alive and answering; a death stops the run. */
  alive(): Promise<boolean>;
  /** The server's error-level log lines since the last call (none for targets without a server). */
  errorsLogged?(): string[];
}

const MAX_FINDINGS = 25;

export async function runCases<I>(runner: CaseRunner<I>, tally: Tally, opts: BatchOptions): Promise<'done' | 'death'> {
  for (let start = opts.from; start < opts.to; start += opts.batch) {
    const end = Math.min(opts.to, start + opts.batch);
    let next = start;
    const lane = async () => {
      while (next < end) {
        const index = next++;
        let input: I | undefined;
        let outcome: Outcome;
        try {
          input = runner.generate(caseRng(opts.seed, runner.name, index));
          outcome = await runner.execute(input);
        } catch (error) {
          outcome = { kind: 'no-answer', detail: `the fuzz client failed: ${String(error).slice(0, 250)}` };
        }
        tally.cases++;
        tally.outcomes[outcome.kind] = (tally.outcomes[outcome.kind] ?? 0) + 1;
        if (FAILURES.has(outcome.kind) && tally.findings.length < MAX_FINDINGS) {
          tally.findings.push({
            index,
            kind: outcome.kind,
            status: outcome.status,
            detail: outcome.detail,
            input: input === undefined ? '(not generated)' : runner.describe(input).slice(0, 600),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency }, lane));
    for (const line of opts.errorsLogged?.() ?? []) {
      tally.outcomes['error-logged'] = (tally.outcomes['error-logged'] ?? 0) + 1;
      // Which case caused it is not known (cases run concurrently): the batch is named, the log line says what.
      if (tally.findings.length < MAX_FINDINGS)
        tally.findings.push({ index: start, kind: 'error-logged', detail: `during cases ${start}–${end - 1}: ${line.slice(0, 400)}` });
    }
    if (!(await opts.alive())) {
      tally.outcomes.death = (tally.outcomes.death ?? 0) + 1;
      tally.findings.push({ index: start, kind: 'death', detail: `the server died or stopped answering during cases ${start}–${end - 1}` });
      opts.onBatch(end);
      return 'death';
    }
    opts.onBatch(end);
  }
  return 'done';
}

export interface FuzzServer {
  process: ServerProcess;
  dir: string;
  /** A call token (transcription mode) minted for the fixture key, for the carrier streams. */
  callToken: string;
  alive(): Promise<boolean>;
  /** Error-level log lines since the last call (at most 100 kept between calls). */
  takeErrorLines(): string[];
  stop(): Promise<void>;
}

/** pino's numeric level of `error`. */
const PINO_ERROR = 50;

/**
 * A Kuma process with the demo models, rate limits off, its store and spill files in a temp folder. Its
 * retirement date is a year ahead, so the native routes are served (past it they all answer 410 before
 * reaching any validation); it logs at level error, and those lines are collected.
 */
export async function startFuzzServer(): Promise<FuzzServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-fuzz-'));
  const server = await startServerProcess({
    KUMA_DB_PATH: path.join(dir, 'kuma.sqlite'),
    KUMA_TMP_DIR: dir,
    KUMA_RATE_LIMITS: 'off',
    KUMA_LOG_LEVEL: 'error',
    KUMA_RETIREMENT_DATE: new Date(Date.now() + 365 * 86_400_000).toISOString().slice(0, 10),
  });
  let exited = false;
  server.child.once('exit', () => (exited = true));
  process.once('exit', () => server.child.kill('SIGKILL')); // never leave a server behind, whatever ends this run
  let errorLines: string[] = [];
  readline.createInterface({ input: server.child.stdout! }).on('line', (line) => {
    let level = 0;
    try {
      level = (JSON.parse(line) as { level?: number }).level ?? 0;
    } catch {
      level = PINO_ERROR; // not a log line: something wrote to stdout that should not have
    }
    if (level >= PINO_ERROR && errorLines.length < 100) errorLines.push(line);
  });
  const callToken = await mintCallToken(server);
  return {
    process: server,
    dir,
    callToken,
    takeErrorLines: () => errorLines.splice(0),
    async alive() {
      if (exited) return false;
      try {
        const res = await fetch(`${server.baseUrl}/healthz`, { signal: AbortSignal.timeout(10_000) });
        await res.arrayBuffer();
        return res.status === 200;
      } catch {
        return false;
      }
    },
    async stop() {
      if (!exited) {
        const gone = new Promise((resolve) => server.child.once('exit', resolve));
        server.child.kill('SIGTERM');
        await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 5000))]);
        server.child.kill('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function mintCallToken(server: ServerProcess): Promise<string> {
  const res = await fetch(`${server.baseUrl}/telephony/v1/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ mode: 'transcription', ttl_seconds: 86_400 }),
  });
  const json = (await res.json()) as { token?: string };
  if (res.status !== 200 || !json.token) throw new Error(`minting the fuzz's call token: ${res.status} ${JSON.stringify(json)}`);
  return json.token;
}

const rssMb = (pid: number): number => {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
};

const childrenOf = (pid: number): number[] => {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

/** Peak resident memory of a process and, separately, of its child processes (the decoders), sampled. */
export class RssSampler {
  peakMb = 0;
  peakChildrenMb = 0;
  private timer: NodeJS.Timeout | undefined;

  start(pid: () => number | undefined, exclude: () => number[] = () => []): void {
    this.timer = setInterval(() => {
      const p = pid();
      if (!p) return;
      this.peakMb = Math.max(this.peakMb, rssMb(p));
      const skip = new Set(exclude());
      this.peakChildrenMb = Math.max(
        this.peakChildrenMb,
        childrenOf(p)
          .filter((c) => !skip.has(c))
          .reduce((n, c) => n + rssMb(c), 0),
      );
    }, 250);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
