/**
 * How busy this server process keeps the CPUs: the CPU time the process used over the last `intervalMs`
 * (process.cpuUsage: every thread of it — the I/O thread, the model and encoder workers), as a share of
 * all the cores' time, 0–1. Work that is a courtesy (a realtime turn's small, early chunks that make its
 * interim text move) asks it before starting, so that a server saturating the machine spends its CPU on what
 * callers wait for (voice-activity detection, final transcripts).
 *
 * The server's own share, not the machine's: a browser, a build or another service on the same machine used
 * to keep interims off (a laptop running the Studio in Chromium next to the server never saw interim text),
 * though the server itself had CPU to spare. Child processes (upload decoders, ffmpeg) are not counted.
 */
import os from 'node:os';

export interface CpuLoad {
  /** Share of all cores' time this process used over the last interval (0 before the first sample). */
  busyShare(): number;
  close(): void;
}

export function watchCpuLoad(intervalMs = 250, cores = Math.max(1, os.availableParallelism())): CpuLoad {
  let last = process.cpuUsage();
  let lastAt = process.hrtime.bigint();
  let share = 0;
  const timer = setInterval(() => {
    const now = process.cpuUsage();
    const at = process.hrtime.bigint();
    const elapsedUs = Number(at - lastAt) / 1000;
    const usedUs = now.user - last.user + (now.system - last.system);
    if (elapsedUs > 0) share = Math.min(1, Math.max(0, usedUs / (elapsedUs * cores)));
    last = now;
    lastAt = at;
  }, intervalMs);
  timer.unref();
  return {
    busyShare: () => share,
    close: () => clearInterval(timer),
  };
}
