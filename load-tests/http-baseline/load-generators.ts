/**
 * The load generators of bench:http, behind one shape: wrk when it is installed (`apt-get install wrk`),
 * otherwise autocannon. wrk is C with an epoll loop, so on a small machine it takes far less of the CPU
 * the servers compete for than autocannon (measured 30–60 % of a core on a 2-core machine), and the req/s
 * ratio then measures the servers rather than the load generator. Which one ran is recorded with the result.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';

export interface LoadRequest {
  url: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
}

export interface LoadResult {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses with a status other than 2xx (wrk: 4xx/5xx, the only kinds this route could give). */
  non2xx: number;
  /** Socket errors and timeouts. */
  errors: number;
  /** CPU the generator itself used, in ms (its process, or the child wrk). */
  cpuMs: number;
}

export interface LoadGenerator {
  /** For the record: name, version, threads. */
  description: string;
  run(request: LoadRequest): Promise<LoadResult>;
}

export function wrkVersion(): string | null {
  try {
    // wrk -v prints its version and exits 1; the output is what matters.
    return execFileSync('wrk', ['-v'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
      .split('\n')[0]!
      .replace(/\s*\[.*$/, '')
      .trim();
  } catch (err) {
    const out = (err as { stdout?: string }).stdout;
    return typeof out === 'string' && out.startsWith('wrk')
      ? out
          .split('\n')[0]!
          .replace(/\s*\[.*$/, '')
          .trim()
      : null;
  }
}

/** `auto`: wrk when found on PATH, else autocannon. */
export function pickLoadGenerator(choice: string, workDir: string, wrkThreads: number): LoadGenerator {
  const version = choice === 'autocannon' ? null : wrkVersion();
  if (choice === 'wrk' && !version) throw new Error('--loadgen wrk: wrk is not installed (apt-get install wrk)');
  if (version) return wrkGenerator(version, workDir, wrkThreads);
  if (choice !== 'auto' && choice !== 'autocannon') throw new Error(`--loadgen must be auto, wrk or autocannon, got ${choice}`);
  return autocannonGenerator();
}

// wrk's done() hook prints its figures as one JSON line (latencies in µs), so nothing parses its text report.
const WRK_REPORT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"status":%d,"errors":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.status,
    e.connect + e.read + e.write + e.timeout))
end
`;

/** CPU of this process's waited-for children (utime + stime of those reaped), in ms, from /proc. */
function childrenCpuMs(): number {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // cutime and cstime are fields 16 and 17 of stat, 14 and 15 after the command name.
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / clockTicks();
  } catch {
    return Number.NaN;
  }
}

let ticks: number | undefined;
export function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100; // the Linux default
    }
  }
  return ticks;
}

function wrkGenerator(version: string, workDir: string, threads: number): LoadGenerator {
  const script = path.join(workDir, 'wrk-report.lua');
  fs.writeFileSync(script, WRK_REPORT);
  return {
    description: `${version}, ${threads} thread(s), as a child process`,
    async run(request) {
      const args = ['-t', String(Math.min(threads, request.connections)), '-c', String(request.connections), '-d', `${request.seconds}s`, '-s', script];
      for (const [name, value] of Object.entries(request.headers)) args.push('-H', `${name}: ${value}`);
      args.push(request.url);
      const cpuBefore = childrenCpuMs();
      const output = await new Promise<string>((resolve, reject) => {
        const proc = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        proc.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
        proc.once('error', reject);
        proc.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited ${code}: ${out}`))));
      });
      const line = /^WRK_JSON (.*)$/m.exec(output);
      if (!line) throw new Error(`wrk printed no report:\n${output}`);
      const r = JSON.parse(line[1]!) as { requests: number; durationUs: number; p50Us: number; p99Us: number; status: number; errors: number };
      return {
        requests: r.requests,
        seconds: r.durationUs / 1e6,
        p50Ms: r.p50Us / 1000,
        p99Ms: r.p99Us / 1000,
        non2xx: r.status,
        errors: r.errors,
        cpuMs: childrenCpuMs() - cpuBefore,
      };
    },
  };
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : Number.NaN;
}

function autocannonGenerator(): LoadGenerator {
  return {
    description: 'autocannon (in the orchestrator process)',
    async run(request) {
      // Our own latency record: autocannon's histogram has 1 ms resolution, too coarse for sub-ms p50s.
      const latencies: number[] = [];
      const selfBefore = process.cpuUsage();
      // The callback form: it returns the instance, whose 'response' events carry each latency.
      const result = await new Promise<autocannon.Result>((resolve, reject) => {
        const instance = autocannon(
          { url: request.url, headers: request.headers, connections: request.connections, pipelining: 1, duration: request.seconds },
          (err, res) => (err ? reject(err) : resolve(res)),
        );
        instance.on('response', (_client, _status, _bytes, ms) => void latencies.push(ms));
      });
      const self = process.cpuUsage(selfBefore);
      const sorted = Float64Array.from(latencies).sort();
      return {
        requests: result.requests.total,
        seconds: result.duration,
        p50Ms: percentile(sorted, 50),
        p99Ms: percentile(sorted, 99),
        non2xx: result.non2xx,
        errors: result.errors + result.timeouts,
        cpuMs: (self.user + self.system) / 1000,
      };
    },
  };
}
