/**
 * The log destination of both benchmark servers. Both log at `info`, so every request writes its JSON
 * access-log line, as in production (the premise: every request does a key lookup and writes an
 * access-log line). Lines go through the same asynchronous pino destination (SonicBoom, sync: false) that
 * production uses for stdout, but to /dev/null: the server pays for building and writing each line, and
 * the machine's disk (or the orchestrator reading a pipe) is kept out of the measurement. Warnings and
 * errors also go to stdout, where the orchestrator reports them as problems seen under load.
 */
import pino, { type DestinationStream } from 'pino';

/** `info`: the access log is on, on both servers alike. */
export const BENCH_LOG_LEVEL = 'info';

export function benchLogDestination(): DestinationStream {
  return pino.multistream([
    { level: 'info', stream: pino.destination({ dest: '/dev/null', sync: false }) },
    { level: 'warn', stream: pino.destination({ dest: 1, sync: false }) },
  ]);
}
