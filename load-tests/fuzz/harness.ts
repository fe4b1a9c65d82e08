/**
 * Runs a fuzz target's cases [from, to) in batches with bounded concurrency, each case generated from its
 * own seed (rng.ts), and tallies the outcomes (outcomes.ts). Between batches the caller saves its state,
 * so a run stopped at any point resumes at the last saved batch; the server process is checked after
 * every batch (still alive, /healthz answering) and a death ends the target's run there.
 * Also: the server process (with its decoder children) started for the HTTP targets, and the sampler of
 * resident memory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
          tally.findings.push({ index, kind: outcome.kind, status: outcome.status, detail: outcome.detail, input: input === undefined ? '(not generated)' : runner.describe(input).slice(0, 600) });
        }
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency }, lane));
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
  alive(): Promise<boolean>;
  stop(): Promise<void>;
}

/** A Kuma process with the demo models, rate limits off, its store and spill files in a temp folder. */
export async function startFuzzServer(): Promise<FuzzServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kuma-fuzz-'));
  const server = await startServerProcess({
    KUMA_DB_PATH: path.join(dir, 'kuma.sqlite'),
    KUMA_TMP_DIR: dir,
    KUMA_RATE_LIMITS: 'off',
    KUMA_LOG_LEVEL: process.env.KUMA_LOG_LEVEL ?? 'fatal',
  });
  let exited = false;
  server.child.once('exit', () => (exited = true));
  process.once('exit', () => server.child.kill('SIGKILL')); // never leave a server behind, whatever ends this run
  return {
    process: server,
    dir,
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
      this.peakChildrenMb = Math.max(this.peakChildrenMb, childrenOf(p).filter((c) => !skip.has(c)).reduce((n, c) => n + rssMb(c), 0));
    }, 250);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
