/**
 * Structured JSON logs (pino). Request logs carry the request id, route, status and timing; they never
 * carry request headers, so API keys cannot reach the log. The destination is injectable for tests.
 */
import pino, { type Logger, type DestinationStream } from 'pino';

export type { Logger };

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'kuma' },
      timestamp: isoTimeOncePerMillisecond,
      // Belt and braces: should a header object ever be logged, the credentials are cut out.
      redact: { paths: ['*.authorization', '*["x-api-key"]', 'headers.authorization', 'headers["x-api-key"]'], censor: '[redacted]' },
    },
    destination ?? pino.destination({ sync: false }),
  );
}

/**
 * The logger for the one-line-per-request access log: the same destination, level and fields, without the
 * redaction pass. Its lines are built from fixed fields (id, method, route, path, status, time), none of
 * which can hold a credential, and redaction was half the cost of writing each line.
 */
export function accessLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: [] } });
}

// pino's isoTime formats a Date for every line; under load many lines share a millisecond, so the
// formatted field is kept for the millisecond it was made in. Same output as pino.stdTimeFunctions.isoTime.
let cachedMs = -1;
let cachedField = '';
function isoTimeOncePerMillisecond(): string {
  const now = Date.now();
  if (now !== cachedMs) {
    cachedMs = now;
    cachedField = `,"time":"${new Date(now).toISOString()}"`;
  }
  return cachedField;
}

/**
 * Writes a plain line (the ready line) into the log's own destination, so it lands in order with the JSON lines
 * before it: the destination buffers (sync: false), and a direct process.stdout.write overtook them.
 */
export function writeBesideLog(logger: Logger, text: string): void {
  const stream = (logger as unknown as Record<symbol, { write?: (s: string) => unknown } | undefined>)[pino.symbols.streamSym];
  if (stream?.write) stream.write(text);
  else process.stdout.write(text);
}
