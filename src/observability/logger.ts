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
      timestamp: pino.stdTimeFunctions.isoTime,
      // Belt and braces: should a header object ever be logged, the credentials are cut out.
      redact: { paths: ['*.authorization', '*["x-api-key"]', 'headers.authorization', 'headers["x-api-key"]'], censor: '[redacted]' },
    },
    destination ?? pino.destination({ sync: false }),
  );
}
