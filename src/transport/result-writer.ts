/**
 * Turns an ApiResult (or a thrown error) into bytes on the wire: whole JSON/text bodies, SSE streams and
 * raw byte streams, each streamed with backpressure through the ResponseSink. A failure after the status
 * line has gone out ends the stream at the point reached; SSE streams get an error event first.
 */
import type { ApiResult, DuplexResult, SseMessage } from '../api/types.js';
import { ApiError, toApiError } from '../api/errors.js';
import type { ResponseSink } from './response-sink.js';

export interface WriteContext {
  sink: ResponseSink;
  baseHeaders: Record<string, string>;
  /** Close the connection after the response (the request body was not read to the end). */
  closeConnection: () => boolean;
  /** Part of the request was left unread (or its framing was bad): the connection must be closed, not just told to. */
  mustCloseConnection: () => boolean;
  headOnly: boolean;
  /** Errors raised mid-stream are reported here (for the log), since the client can no longer get a status. */
  onStreamError: (err: unknown) => void;
  /** Completes a WebSocket upgrade with this result; false when the request was not an upgrade. */
  upgrade?: (result: DuplexResult) => boolean;
}

export function formatSse(message: SseMessage): string {
  const event = message.event ? `event: ${message.event}\n` : '';
  // A payload line must not contain a bare newline; JSON.stringify never emits one.
  const data = message.data
    .split(/\r?\n/)
    .map((line) => `data: ${line}\n`)
    .join('');
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

/**
 * Writes a whole (json or text) result at once and returns true; returns false, writing nothing, for a
 * stream. Synchronous, so the common small response costs no promise.
 */
export function writeWhole(ctx: WriteContext, result: ApiResult): boolean {
  if (result.kind !== 'json' && result.kind !== 'text') return false;
  // One headers object per response: the base headers, the result's own, then the content type.
  const headers = Object.assign({}, ctx.baseHeaders, result.headers);
  const body = result.kind === 'json' ? JSON.stringify(result.body) : result.body;
  headers['content-type'] = result.kind === 'json' ? 'application/json' : result.contentType;
  ctx.sink.sendWhole(result.status ?? 200, headers, body, ctx.closeConnection(), ctx.headOnly);
  return true;
}

export async function writeResult(ctx: WriteContext, result: ApiResult): Promise<void> {
  if (writeWhole(ctx, result)) return;
  await writeStreamed(ctx, result, null);
}

/** Told, once a response with a charge is over, whether it was delivered; awaited before a stream's source is cleaned up. */
export type OnEnded = (delivered: boolean) => Promise<void>;

/**
 * Writes a result whose charge waits for delivery (ApiResult.onDelivered) and tells `onEnded` whether it was
 * delivered: complete (a stream to its end, without error) and its last bytes written to the network, as
 * the sink confirms them (response-sink.ts). A stream tells it before its source's cleanup (an engine job
 * may take its time to acknowledge a cancel; the charge does not wait for that).
 */
export async function writeDelivered(ctx: WriteContext, result: ApiResult, onEnded: OnEnded): Promise<void> {
  if (result.kind === 'json' || result.kind === 'text') {
    const headers = Object.assign({}, ctx.baseHeaders, result.headers);
    headers['content-type'] = result.kind === 'json' ? 'application/json' : result.contentType;
    const body = result.kind === 'json' ? JSON.stringify(result.body) : result.body;
    if (ctx.headOnly) {
      ctx.sink.sendWhole(result.status ?? 200, headers, body, ctx.closeConnection(), true);
      return onEnded(false);
    }
    // tryEnd, which confirms delivery, cannot close the connection itself. When nothing is left unread (the
    // server is draining), the client is told to close instead; otherwise the answer goes out plainly with the
    // close, and is not confirmed (not charged) — a billed route reads its whole request first.
    const mustClose = ctx.mustCloseConnection();
    if (!mustClose && ctx.closeConnection()) headers.connection = 'close';
    return onEnded(await ctx.sink.sendWholeDelivered(result.status ?? 200, headers, body, mustClose));
  }
  await writeStreamed(ctx, result, onEnded);
}

/** A stream (or a WebSocket upgrade); with `onEnded`, its delivery is confirmed and reported there. */
async function writeStreamed(ctx: WriteContext, result: ApiResult, onEnded: OnEnded | null): Promise<void> {
  const confirmed = onEnded !== null && result.kind !== 'duplex' && result.kind !== 'json' && result.kind !== 'text' && result.confirmDelivery !== false;
  const status = result.status ?? 200;
  const headers = { ...ctx.baseHeaders, ...result.headers };
  switch (result.kind) {
    case 'sse':
      return pump(
        ctx,
        result.events,
        () =>
          ctx.sink.begin(
            status,
            {
              ...headers,
              ...result.lateHeaders?.(),
              'content-type': 'text/event-stream; charset=utf-8',
              'cache-control': 'no-cache',
              'x-accel-buffering': 'no',
            },
            confirmed,
          ),
        formatSse,
        (err) => formatSse({ data: JSON.stringify(toApiError(err).toEnvelope()) }),
        onEnded,
        confirmed,
      );
    case 'bytes':
      return pump(
        ctx,
        result.chunks,
        () => ctx.sink.begin(status, { ...headers, ...result.lateHeaders?.(), 'content-type': result.contentType }, confirmed),
        (chunk) => chunk,
        () => null,
        onEnded,
        confirmed,
      );
    case 'duplex':
      if (ctx.upgrade?.(result)) return;
      // A WebSocket route asked for over plain HTTP.
      {
        const err = new ApiError('upgrade_required', 'This endpoint is a WebSocket: connect with an Upgrade: websocket request.');
        writeError(ctx, err, err.toEnvelope());
      }
      return;
  }
}

/**
 * Streams `source` with backpressure. The first item is awaited BEFORE the status line goes out, so a
 * failure that happens before any output (a full model queue, a model that fails at once) still becomes a
 * proper error response with its status; after that, a failure can only end the stream. With `onEnded`,
 * tells it whether the stream was delivered — to its end, without error, its last bytes written to the
 * network (ResponseSink.endConfirmed) — once the response is over and before the producer is stopped.
 */
async function pump<T>(
  ctx: WriteContext,
  source: AsyncIterable<T>,
  begin: () => void,
  encode: (item: T) => string | Uint8Array,
  encodeError: (err: unknown) => string | null,
  onEnded: OnEnded | null,
  confirmed: boolean,
): Promise<void> {
  const iterator = source[Symbol.asyncIterator]();
  const first = await iterator.next();
  begin();
  let complete = false;
  try {
    if (first.done) complete = true;
    else if (await ctx.sink.write(encode(first.value))) {
      while (true) {
        const next = await iterator.next();
        if (next.done) {
          complete = true;
          break;
        }
        if (!(await ctx.sink.write(encode(next.value)))) break;
      }
    }
  } catch (err) {
    ctx.onStreamError(err);
    const tail = encodeError(err);
    if (tail !== null) await ctx.sink.write(tail).catch(() => false);
  }
  try {
    if (!onEnded) ctx.sink.end(ctx.closeConnection());
    else if (!confirmed) {
      ctx.sink.end(ctx.closeConnection());
      await onEnded(complete);
    } else await onEnded(ctx.sink.endConfirmed(ctx.closeConnection()) && complete);
  } finally {
    // Stops the producer when we leave early (client gone or stalled); a finished iterator ignores it.
    await iterator.return?.();
  }
}
