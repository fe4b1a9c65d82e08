/**
 * Writes one HTTP response through uWebSockets.js: every write is corked (uWS requires it outside its
 * own callbacks), a streamed write that meets backpressure waits for `onWritable` before the next one,
 * and a client that reads nothing for `stallTimeoutMs` is disconnected. So at most one chunk beyond the
 * socket buffers is ever queued toward a slow client.
 *
 * uWS throws (and the throw ends the process) when a response is touched after it ended or was aborted,
 * so every call on `res` goes through this class, which checks `live` first — including pausing and
 * resuming the request body's socket.
 */
import { STATUS_CODES } from 'node:http';
import type { HttpResponse, us_socket_context_t } from 'uWebSockets.js';

/** uWS's cork buffer (LoopData::CORK_BUFFER_SIZE): a write that does not fit in it goes to the socket at once. */
const UWS_CORK_BUFFER_BYTES = 16 * 1024;

export class ResponseSink {
  private aborted = false;
  private headSent = false;
  private finished = false;
  private status = 0;
  private readonly abortWaiters = new Set<() => void>();
  /** Set by answerAndClose: the close that follows is ours, after a complete answer, not the client leaving. */
  private closedAfterAnswer = false;

  constructor(
    private readonly res: HttpResponse,
    private readonly stallTimeoutMs: number,
  ) {}

  get isAborted(): boolean {
    return this.aborted;
  }

  get hasStarted(): boolean {
    return this.headSent;
  }

  get isFinished(): boolean {
    return this.finished;
  }

  get statusCode(): number {
    return this.status;
  }

  /** True while `res` may still be touched: not aborted, not ended. */
  get live(): boolean {
    return !this.aborted && !this.finished;
  }

  /** The client's IP address as text (IPv6 in full, uncompressed); empty once the response is over. */
  remoteAddress(): string {
    return this.live ? Buffer.from(this.res.getRemoteAddressAsText()).toString('latin1') : '';
  }

  /** Pauses reading the request body (backpressure); a no-op once the response is over. */
  pauseSocket(): void {
    if (this.live) this.res.pause();
  }

  resumeSocket(): void {
    if (this.live) this.res.resume();
  }

  /** Called from uWS onAborted: the socket is gone and `res` must not be touched again. */
  markAborted(): void {
    if (this.closedAfterAnswer) return;
    this.aborted = true;
    for (const wake of this.abortWaiters) wake();
    this.abortWaiters.clear();
  }

  /** Sends a complete response in one go. `closeConnection` drops keep-alive (used when a body went unread). */
  sendWhole(status: number, headers: Record<string, string>, body: string | Uint8Array, closeConnection = false, headOnly = false): void {
    if (this.aborted || this.finished) return;
    this.status = status;
    this.headSent = true;
    this.finished = true;
    this.res.cork(() => {
      this.writeHead(status, headers);
      if (headOnly) this.endHead(Buffer.byteLength(body as string), closeConnection);
      else this.res.end(body, closeConnection);
    });
  }

  /**
   * Ends a response that reports a length but sends no body (HEAD, 304). uWS's endWithoutBody(length)
   * writes the Content-Length but then waits for that many bytes that never come, so the next request on
   * the connection got no answer (a keep-alive client saw "socket hang up"). Called with no argument it
   * writes no Content-Length and completes the response, so the header is written here; when the
   * connection is to be closed anyway, the length form with its close is used.
   */
  private endHead(length: number, closeConnection: boolean): void {
    if (closeConnection) {
      this.res.endWithoutBody(length, true);
      return;
    }
    this.res.writeHeader('content-length', String(length));
    this.res.endWithoutBody();
  }

  /** Starts a streamed response; headers leave with the first chunk. */
  begin(status: number, headers: Record<string, string>): void {
    if (this.aborted || this.finished || this.headSent) return;
    this.status = status;
    this.headSent = true;
    this.res.cork(() => this.writeHead(status, headers));
  }

  /** Writes a chunk; resolves false when the client is gone or stalled (stop producing). */
  async write(chunk: string | Uint8Array): Promise<boolean> {
    if (this.aborted || this.finished) return false;
    let accepted = true;
    this.res.cork(() => {
      accepted = this.res.write(chunk);
    });
    if (accepted) return true;
    return this.waitWritable();
  }

  end(closeConnection = false): void {
    if (this.aborted || this.finished) return;
    this.finished = true;
    this.res.cork(() => this.res.end(undefined, closeConnection));
  }

  /**
   * Completes a WebSocket upgrade (101) with these headers; uWS then calls the behaviour's `open`
   * synchronously. False when the client left before (nothing is sent).
   */
  upgrade(headers: Record<string, string>, userData: unknown, key: string, protocol: string, extensions: string, context: us_socket_context_t): boolean {
    if (this.aborted || this.finished) return false;
    this.status = 101;
    this.headSent = true;
    this.finished = true;
    // uWS sends custom headers on an upgrade only after an explicit 101 status line; they go out corked.
    this.res.cork(() => this.writeHead(101, headers));
    // The upgrade itself must not run inside res.cork(): after the callback, uWS's cork() reads the HTTP
    // response's state from the socket's memory, which the upgrade has just reallocated (in place) as a
    // WebSocket; when the stale bytes look like "Connection: close, response done" it closes the new
    // WebSocket (uNetworking/uWebSockets#1929). Seen here as sockets dropped (1006) right after `open`.
    // Uncorked, uWS prints a cork warning when this runs outside its callbacks; a lost socket is worse.
    this.res.upgrade(userData, key, protocol, extensions, context);
    return true;
  }

  /**
   * Answers and closes the connection before uWS reads another byte of it: for a request whose framing is
   * ambiguous (request-head.ts), where whatever follows on the connection may be a request smuggled past a
   * proxy. Must run inside uWS's request callback. uWS parses every request already read from the socket
   * as soon as the callback returns, even after end(body, closeConnection): that close waits until uWS
   * uncorks the socket at the end of the read. Only a closed socket stops it. Closing drops what is still
   * in uWS's cork buffer, so the answer is made larger than that buffer, which makes uWS write it to the
   * socket at once; a client that is not reading gets it cut short. The body is delimited by the close (no
   * Content-Length), padded with spaces (JSON allows them), and written with the head in one go.
   */
  answerAndClose(status: number, headers: Record<string, string>, body: string): void {
    if (this.aborted || this.finished) return;
    this.status = status;
    this.headSent = true;
    this.finished = true;
    let head = `${status} ${STATUS_CODES[status] ?? ''}\r\n`;
    for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
    head += 'connection: close\r\n\r\n';
    const padding = Math.max(0, UWS_CORK_BUFFER_BYTES + 1 - Buffer.byteLength(head) - Buffer.byteLength(body));
    // uWS writes `HTTP/1.1 `, then this, then a CRLF (part of the body, like the padding).
    this.res.cork(() => this.res.writeStatus(head + body + ' '.repeat(padding)));
    this.closedAfterAnswer = true;
    this.res.close();
  }

  /** Drops the connection without a proper end (used when the client stalls). */
  close(): void {
    if (this.aborted || this.finished) return;
    this.finished = true;
    this.res.close();
    this.markAborted();
  }

  private writeHead(status: number, headers: Record<string, string>): void {
    this.res.writeStatus(`${status} ${STATUS_CODES[status] ?? ''}`);
    for (const name in headers) this.res.writeHeader(name, headers[name]!); // no [name, value] array per header
  }

  private waitWritable(): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      let settled = false;
      const settle = (ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.abortWaiters.delete(onAbort);
        resolve(ok);
      };
      const onAbort = () => settle(false);
      const timer = setTimeout(() => {
        // The client has read nothing for too long: free the connection rather than queue more for it.
        this.close();
        settle(false);
      }, this.stallTimeoutMs);
      this.abortWaiters.add(onAbort);
      this.res.onWritable(() => {
        settle(this.live);
        return true;
      });
    });
  }
}
