/**
 * Lowers the calling thread's scheduling priority (Linux: setpriority on the thread id, which
 * /proc/thread-self names). With more busy worker threads than cores, the main thread — which only does
 * I/O — then gets the CPU as soon as it is runnable, so timers and sockets stay responsive. Threads
 * started from the calling thread afterwards (onnxruntime's) inherit the value. Elsewhere, or where not
 * permitted, this is a no-op.
 */
import fs from 'node:fs';
import os from 'node:os';

export function lowerThreadPriority(niceness: number): void {
  if (niceness <= 0) return;
  try {
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) os.setPriority(tid, niceness);
  } catch {
    // not Linux, or not permitted: run at normal priority
  }
}
