/**
 * Turns an ApiResult (or a thrown error) into bytes on the wire: whole JSON/text bodies, SSE streams and
 * raw byte streams, each streamed with backpressure through the ResponseSink. A failure after the status
 * line has gone out ends the stream at the point reached; SSE streams get an error event first.
 */
import type { ApiResult, SseMessage } from '../api/types.js';
import { toApiError, type ApiError } from '../api/errors.js';
import type { ResponseSink } from './response-sink.js';

export interface WriteContext {
  sink: ResponseSink;
  baseHeaders: Record<string, string>;
  /** Close the connection after the response (the request body was not read to the end). */
  closeConnection: () => boolean;
  headOnly: boolean;
  /** Errors raised mid-stream are reported here (for the log), since the client can no longer get a status. */
  onStreamError: (err: unknown) => void;
}

export function formatSse(message: SseMessage): string {
  const event = message.event ? `event: ${message.event}\n` : '';
  // A payload line must not contain a bare newline; JSON.stringify never emits one.
  const data = message.data.split(/\r?\n/).map((line) => `data: ${line}\n`).join('');
  return `${event}${data}\n`;
}

export function writeError(ctx: WriteContext, err: ApiError, body: unknown): void {
  ctx.sink.sendWhole(
    err.status,
    { ...ctx.baseHeaders, ...err.headers, 'content-type': 'application/json' },
    JSON.stringify(body),
    ctx.closeConnection(),
    ctx.headOnly,
  );
}

export async function writeResult(ctx: WriteContext, result: ApiResult): Promise<void> {
  const status = result.status ?? 200;
  const headers = { ...ctx.baseHeaders, ...result.headers };
  switch (result.kind) {
    case 'json':
      ctx.sink.sendWhole(status, { ...headers, 'content-type': 'application/json' }, JSON.stringify(result.body), ctx.closeConnection(), ctx.headOnly);
      return;
    case 'text':
      ctx.sink.sendWhole(status, { ...headers, 'content-type': result.contentType }, result.body, ctx.closeConnection(), ctx.headOnly);
      return;
    case 'sse':
      ctx.sink.begin(status, {
        ...headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
      await pump(ctx, result.events, formatSse, (err) => formatSse({ data: JSON.stringify(toApiError(err).toEnvelope()) }));
      return;
    case 'bytes':
      ctx.sink.begin(status, { ...headers, 'content-type': result.contentType });
      await pump(ctx, result.chunks, (chunk) => chunk, () => null);
      return;
  }
}

async function pump<T>(
  ctx: WriteContext,
  source: AsyncIterable<T>,
  encode: (item: T) => string | Uint8Array,
  encodeError: (err: unknown) => string | null,
): Promise<void> {
  try {
    // Leaving this loop early (client gone or stalled) calls the source's return(), which stops the producer.
    for await (const item of source) {
      if (!(await ctx.sink.write(encode(item)))) break;
    }
  } catch (err) {
    ctx.onStreamError(err);
    const tail = encodeError(err);
    if (tail !== null) await ctx.sink.write(tail);
  } finally {
    ctx.sink.end(ctx.closeConnection());
  }
}
