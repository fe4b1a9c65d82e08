/**
 * Shared by every load test: the environment lines recorded with each result (commit, Node version, CPU)
 * and appending a section to load-tests/RESULTS.md.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const RESULTS_FILE = path.join(ROOT, 'load-tests', 'RESULTS.md');

const RESULTS_HEADER = `# Load-test results

Recorded runs of the load tests in this folder (see README.md). Each section below is one run, appended by the
test itself with the commit, Node version, CPU and parameters it ran with. Numbers are only comparable within
one section (same machine, same moment); across sections compare ratios, not absolute figures.

`;

function tryRun(cmd: string, ...args: string[]): string | undefined {
  try {
    return execFileSync(cmd, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/** Short commit hash, `-dirty` when the work tree has changes. */
export function gitCommit(): string {
  const hash = tryRun('git', 'rev-parse', '--short', 'HEAD') ?? 'no-commit';
  return tryRun('git', 'status', '--porcelain') ? `${hash}-dirty` : hash;
}

export function cpuDescription(): string {
  const cpus = os.cpus();
  return `${cpus[0]?.model ?? 'unknown CPU'} × ${cpus.length} cores (${os.platform()} ${os.arch()})`;
}

export function environmentLines(): string[] {
  return [`- Commit: \`${gitCommit()}\``, `- Node: ${process.version}`, `- CPU: ${cpuDescription()}`];
}

export function appendResults(section: string): void {
  if (!fs.existsSync(RESULTS_FILE)) fs.writeFileSync(RESULTS_FILE, RESULTS_HEADER);
  fs.appendFileSync(RESULTS_FILE, section.endsWith('\n') ? section : `${section}\n`);
  process.stdout.write(`recorded in ${path.relative(ROOT, RESULTS_FILE)}\n`);
}

/** The p-th percentile (nearest rank) of a list of numbers. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * Prints a recorded section — heading with the time, environment lines, notes, then the table — and
 * appends it to RESULTS.md unless `write` is false.
 */
export function recordSection(name: string, notes: string[], table: string[], write: boolean): void {
  const section = [`## ${name} — ${new Date().toISOString()}`, '', ...environmentLines(), ...notes.map((n) => `- ${n}`), '', ...table, ''].join('\n');
  process.stdout.write(`\n${section}\n`);
  if (write) appendResults(section);
}
