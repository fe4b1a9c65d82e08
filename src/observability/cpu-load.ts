/**
 * How busy the machine's CPUs are, sampled from os.cpus() every `intervalMs`: the share of CPU time not idle
 * over the last interval, 0–1, all processes counted. Work that is a courtesy (a realtime turn's interim
 * re-decodes) asks it before starting, so that a saturated machine spends its CPU on what callers wait for
 * (voice-activity detection, final transcripts) — interim decodes re-read the growing turn and cost more
 * than the final one.
 */
import os from 'node:os';

export interface CpuLoad {
  /** Share of the machine's CPU time that was busy over the last interval (0 before the first sample). */
  busyShare(): number;
  close(): void;
}

interface Totals {
  idle: number;
  total: number;
}

function totals(): Totals {
  let idle = 0;
  let total = 0;
  for (const cpu of os.cpus()) {
    const t = cpu.times;
    idle += t.idle;
    total += t.user + t.nice + t.sys + t.idle + t.irq;
  }
  return { idle, total };
}

export function watchCpuLoad(intervalMs = 250): CpuLoad {
  let last = totals();
  let share = 0;
  const timer = setInterval(() => {
    const now = totals();
    const total = now.total - last.total;
    // os.cpus() counts in ms; an interval with no tick recorded keeps the previous figure.
    if (total > 0) share = Math.min(1, Math.max(0, 1 - (now.idle - last.idle) / total));
    last = now;
  }, intervalMs);
  timer.unref();
  return {
    busyShare: () => share,
    close: () => clearInterval(timer),
  };
}
